import type { ReactNode } from 'react';
import type { ApiError } from '../lib/api-client';
import { Button } from './button';

type Tone = 'info' | 'success' | 'warning' | 'danger';

/** A message in the flow of the page; errors are announced to screen readers at once. */
export function Notice({ tone = 'info', title, children }: { tone?: Tone; title?: string; children?: ReactNode }) {
  return (
    <div className={`notice notice-${tone}`} role={tone === 'danger' ? 'alert' : 'status'}>
      {title ? <p className="notice-title">{title}</p> : null}
      {children ? <div className="notice-body">{children}</div> : null}
    </div>
  );
}

export function ErrorNotice({ error, title = 'That did not work' }: { error: ApiError | null; title?: string }) {
  if (!error) return null;
  return (
    <Notice tone="danger" title={title}>
      <p>{error.message}</p>
      {error.requestId ? <p className="muted small">Request ID: <code>{error.requestId}</code></p> : null}
    </Notice>
  );
}

/**
 * A save refused because someone else saved first (a `*_version_conflict`): their message (who and
 * when, where the service knows), that nothing was saved, and the reload that brings their values.
 * Nothing while `message` is null.
 */
export function ConflictNotice({ message, what, onReload, busy }: { message: string | null; what: string; onReload(): void; busy: boolean }) {
  if (message === null) return null;
  return (
    <Notice tone="warning" title={`Someone else saved ${what === 'settings' ? 'these settings' : `this ${what}`} first`}>
      <p>{message}</p>
      <p>Your changes were not saved.</p>
      <Button size="small" onClick={onReload} disabled={busy}>
        Reload {what}
      </Button>
    </Notice>
  );
}

export function Badge({ tone = 'neutral', children }: { tone?: 'neutral' | 'success' | 'warning' | 'danger' | 'info' | 'live'; children: ReactNode }) {
  return <span className={`badge badge-${tone}`}>{children}</span>;
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty-state">
      <p className="empty-title">{title}</p>
      {children ? <div className="empty-body">{children}</div> : null}
    </div>
  );
}
