import type { ReactNode } from 'react';

/** The signed-out frame: product name, one centred card, a calm footer. */
export function AuthLayout({ title, intro, children, footer }: { title: string; intro?: ReactNode; children: ReactNode; footer?: ReactNode }) {
  return (
    <div className="auth-page">
      <header className="auth-brand">
        <span className="brand-mark" aria-hidden="true" />
        <span className="brand-name">Credit Decisioning</span>
        <span className="brand-sub">Lender portal</span>
      </header>
      <main className="auth-card" id="main">
        <h1>{title}</h1>
        {intro ? <div className="auth-intro">{intro}</div> : null}
        {children}
      </main>
      {footer ? <footer className="auth-footer">{footer}</footer> : null}
    </div>
  );
}
