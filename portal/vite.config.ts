/**
 * The portal is built into portal/dist and served by the service at /portal (server/src/modules/
 * portal/portal-static.ts): hashed file names under /portal/assets, no inline scripts (the
 * service's Content-Security-Policy forbids them), no source maps shipped.
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/portal/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // Keep every script an external file: a CSP without 'unsafe-inline' must be enough.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: 'es2022',
  },
  server: {
    // `npm run dev -w portal` with the service on :3000 (same origin rules through the proxy).
    proxy: { '/portal/api': 'http://127.0.0.1:3000', '/v1': 'http://127.0.0.1:3000' },
  },
});
