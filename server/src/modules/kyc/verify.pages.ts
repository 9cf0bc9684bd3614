/**
 * The hosted verification pages: plain server-rendered HTML and one small stylesheet. No JavaScript
 * and no framework: they must load fast on a phone over a poor connection, work with any assistive
 * technology, and give a strict Content-Security-Policy nothing to allow. Every value is escaped.
 * Only masked contact details ever appear; no PII goes into a URL (forms POST to the same path).
 */
import { DOCUMENT_LABELS, type PageModel, type RequestPageModel } from './verification.service.js';

const escape = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export interface FormContext {
  /** Path of this page: forms post to `${action}/<step>`. */
  action: string;
  csrf: string;
}

function layout(title: string, body: string, sandbox: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escape(title)}</title>
<link rel="stylesheet" href="/verify/assets/verify.css">
</head>
<body>
${sandbox ? '<div class="sandbox" role="note">Sandbox: nothing here is real and no message is sent.</div>' : ''}
<main class="card">
${body}
</main>
<footer class="foot">Secured identity check. We never show your full details on this page.</footer>
</body>
</html>`;
}

function notice(model: PageModel): string {
  if (!model.notice) return '';
  const role = model.notice.kind === 'error' ? 'alert' : 'status';
  return `<p class="notice ${model.notice.kind}" role="${role}" id="notice">${escape(model.notice.text)}</p>`;
}

function hidden(form: FormContext): string {
  return `<input type="hidden" name="csrf" value="${escape(form.csrf)}">`;
}

function stepsOf(model: PageModel): string {
  const steps = model.tier === 'hard' ? ['Code', 'Your details', 'ID document'] : ['Code'];
  if (steps.length === 1) return '';
  const current = model.step === 'confirm_identity' ? 1 : model.step === 'upload_document' ? 2 : 0;
  const items = steps
    .map((s, i) => (i === current ? `<li aria-current="step">${escape(s)}</li>` : i < current ? `<li class="done">${escape(s)}<span class="visually-hidden"> (done)</span></li>` : `<li>${escape(s)}</li>`))
    .join('');
  return `<ol class="steps" aria-label="Progress">${items}</ol>`;
}

/**
 * The sandbox's identity step asks for the details on file. A lender who sent only a seeded
 * consumer's id never typed them: the page says where they are written (the values themselves are
 * not shown: no page shows an SSN or a date of birth, sandbox or not).
 */
const SANDBOX_IDENTITY_HINT =
  '<p class="hint">Sandbox: enter the SSN last four and date of birth on file: the ones sent with the application, or, for a seeded consumer, the ones in the <a href="/docs/sandbox">sandbox guide</a>.</p>';

export function renderPage(model: PageModel, form: FormContext): string {
  const merchant = escape(model.merchantName);
  if (model.status === 'verified') {
    return layout('Identity verified', `<h1>You're verified</h1><p>Thank you. Your identity check is complete and your application is being decided now. You can return to ${merchant}.</p>`, model.sandbox);
  }
  if (model.status === 'failed') {
    return layout('Verification not completed', `<h1>We couldn't verify your identity</h1><p>Your application has been passed to the lender for review. They will contact you about your purchase at ${merchant}.</p>`, model.sandbox);
  }
  if (model.status === 'expired') {
    return layout('Link expired', `<h1>This link has expired</h1><p>The time to verify your identity for your purchase at ${merchant} has run out. Please start again at checkout.</p>`, model.sandbox);
  }
  const head = `<h1>Verify your identity</h1><p class="lead">To finish your purchase at ${merchant}, confirm it's you.</p>${stepsOf(model)}`;
  const sandboxHint = model.sandbox ? '<p class="hint">Sandbox codes: <strong>000000</strong> passes, <strong>111111</strong> fails.</p>' : '';
  const describedBy = model.notice ? ' aria-describedby="notice"' : '';
  switch (model.step) {
    case 'send_code':
      return layout(
        'Verify your identity',
        `${head}${notice(model)}
<p>We'll send a 6-digit code to ${model.channel === 'sms' ? 'your phone' : 'your email'} <strong>${escape(model.maskedDestination)}</strong>.</p>
<form method="post" action="${form.action}/send-code">${hidden(form)}<button type="submit">Send code</button></form>`,
        model.sandbox,
      );
    case 'enter_code':
      return layout(
        'Enter your code',
        `${head}${notice(model)}
<form method="post" action="${form.action}/code" novalidate>${hidden(form)}
<label for="code">6-digit code sent to ${escape(model.maskedDestination)}</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required${describedBy}>
${sandboxHint}
<button type="submit">Verify</button>
</form>
<form method="post" action="${form.action}/send-code" class="secondary">${hidden(form)}
<button type="submit" class="link"${model.codesLeft <= 0 ? ' disabled' : ''}>Send a new code</button>
${model.resendInSeconds > 0 ? `<p class="hint">You can ask for a new code in ${model.resendInSeconds} seconds.</p>` : ''}
</form>`,
        model.sandbox,
      );
    case 'confirm_identity':
      return layout(
        'Confirm your details',
        `${head}${notice(model)}
<form method="post" action="${form.action}/identity" novalidate>${hidden(form)}
<label for="ssn_last4">Last 4 digits of your Social Security number</label>
<input id="ssn_last4" name="ssn_last4" inputmode="numeric" autocomplete="off" pattern="[0-9]{4}" maxlength="4" required${describedBy}>
<label for="dob">Date of birth</label>
<input id="dob" name="dob" type="date" autocomplete="bday" required${describedBy}>
${model.sandbox ? SANDBOX_IDENTITY_HINT : ''}
<button type="submit">Continue</button>
</form>`,
        model.sandbox,
      );
    case 'upload_document':
      return layout(
        'Upload your ID',
        `${head}${notice(model)}
<form method="post" action="${form.action}/document" enctype="multipart/form-data">${hidden(form)}
<label for="document">A photo or scan of your driver's license, passport or state ID</label>
<input id="document" name="document" type="file" accept="image/jpeg,image/png,application/pdf" capture="environment" required${describedBy}>
<p class="hint">JPEG, PNG or PDF, up to 10 MB. It is stored encrypted and only the lender's reviewers can see it.</p>
<button type="submit">Upload and finish</button>
</form>`,
        model.sandbox,
      );
    default:
      return layout('Verify your identity', head, model.sandbox);
  }
}

/** The upload page of an underwriter's document request: one file per requested document. */
export function renderDocumentRequestPage(model: RequestPageModel, form: FormContext): string {
  const merchant = escape(model.merchantName);
  if (model.status === 'received') {
    const note = model.notice ? `<p class="notice info" role="status" id="notice">${escape(model.notice.text)}</p>` : '';
    return layout('Documents received', `<h1>Documents received</h1>${note}<p>Thank you. The lender reviewing your purchase at ${merchant} now has your documents and will be in touch.</p>`, model.sandbox);
  }
  if (model.status === 'expired') {
    return layout('Link expired', `<h1>This link has expired</h1><p>The time to upload documents for your purchase at ${merchant} has run out. Please contact the lender for a new link.</p>`, model.sandbox);
  }
  const error = model.notice ? `<p class="notice ${model.notice.kind}" role="${model.notice.kind === 'error' ? 'alert' : 'status'}" id="notice">${escape(model.notice.text)}</p>` : '';
  const describedBy = model.notice ? ' aria-describedby="notice"' : '';
  const fields = model.documentTypes
    .map((type) => {
      const id = `document_${escape(type)}`;
      return `<label for="${id}">${escape(DOCUMENT_LABELS[type] ?? type)}</label>
<input id="${id}" name="${id}" type="file" accept="image/jpeg,image/png,application/pdf" required${describedBy}>`;
    })
    .join('\n');
  return layout(
    'Upload documents',
    `<h1>Upload documents</h1><p class="lead">The lender reviewing your purchase at ${merchant} asked for the documents below.</p>${error}
<form method="post" action="${form.action}/documents" enctype="multipart/form-data">${hidden(form)}
${fields}
<p class="hint">JPEG, PNG or PDF, up to 10 MB each. They are stored encrypted and only the lender's reviewers can see them.</p>
<button type="submit">Upload documents</button>
</form>`,
    model.sandbox,
  );
}

export function renderNotFound(): string {
  return layout('Link not valid', '<h1>This link is not valid</h1><p>Check that you opened the whole link from your checkout, or start again at checkout.</p>', false);
}

export function renderTooManyRequests(): string {
  return layout('Too many requests', '<h1>Too many requests from your network</h1><p>Please wait a few seconds, then reload this page.</p>', false);
}

export function renderForbidden(): string {
  return layout('Please reload', '<h1>Your session has expired</h1><p>Please reload this page and try again.</p>', false);
}

/** A multipart body that cannot be read (no boundary, cut short): the browser never sends one. */
export function renderUnreadableUpload(): string {
  return layout('Upload failed', '<h1>The upload did not arrive complete</h1><p>Please go back, choose the file again and send it once more.</p>', false);
}

export const VERIFY_CSS = `:root{--ink:#14213d;--muted:#4a5568;--line:#d5dae3;--accent:#1d4ed8;--accent-ink:#fff;--bad:#b42318;--ok:#05603a;--bg:#f5f7fb}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
.sandbox{background:#fff4ce;color:#5c4400;text-align:center;padding:.5rem 1rem;font-size:.9rem;border-bottom:1px solid #f0d68a}
.card{max-width:28rem;margin:1.25rem .75rem;background:#fff;border:1px solid var(--line);border-radius:12px;padding:1.5rem}
h1{font-size:1.4rem;margin:0 0 .5rem}
.lead{color:var(--muted);margin-top:0}
label{display:block;font-weight:600;margin:1rem 0 .35rem}
input{width:100%;font-size:1.15rem;padding:.7rem .8rem;border:1px solid #8a94a6;border-radius:8px}
input:focus,button:focus{outline:3px solid #93b4ff;outline-offset:2px}
button{display:block;width:100%;margin-top:1.2rem;padding:.85rem 1rem;font-size:1.05rem;font-weight:600;border:0;border-radius:8px;background:var(--accent);color:var(--accent-ink);cursor:pointer;min-height:48px}
button[disabled]{opacity:.5;cursor:not-allowed}
button.link{background:none;color:var(--accent);text-decoration:underline;margin-top:.5rem;padding:.5rem}
.notice{padding:.7rem .8rem;border-radius:8px;margin:1rem 0}
.notice.error{background:#fef3f2;color:var(--bad);border:1px solid #fecdca}
.notice.info{background:#ecfdf3;color:var(--ok);border:1px solid #abefc6}
.hint{color:var(--muted);font-size:.9rem;margin:.5rem 0 0}
.steps{display:flex;gap:.5rem;list-style:none;padding:0;margin:1rem 0;font-size:.85rem;color:var(--muted)}
.steps li{flex:1;border-top:3px solid var(--line);padding-top:.3rem}
.steps li[aria-current]{border-color:var(--accent);color:var(--ink);font-weight:600}
.steps li.done{border-color:#93b4ff;color:var(--ink)}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (min-width:30rem){.card{margin:2rem auto;padding:2rem}}
.foot{text-align:center;color:var(--muted);font-size:.8rem;padding:0 1rem 2rem}
`;
