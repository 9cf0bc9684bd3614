/*
 * The interactive API reference: swagger-ui (served from this service, swagger-ui-dist) rendering
 * the OpenAPI document this service serves. A served file, not an inline script, because the
 * documentation's Content-Security-Policy allows scripts from this origin only.
 */
(function () {
  'use strict';
  var host = document.getElementById('swagger-ui');
  if (!host || typeof window.SwaggerUIBundle !== 'function') return;
  window.SwaggerUIBundle({
    url: host.getAttribute('data-openapi-url'),
    domNode: host,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    tryItOutEnabled: false,
    // No call to the public validator badge service: nothing leaves this origin.
    validatorUrl: null,
    // Keys stay in this tab only; a reload forgets them.
    persistAuthorization: false,
    supportedSubmitMethods: ['get', 'post'],
  });
})();
