/** Copying ids and secrets: a labelled read-only field plus a Copy button that says when it worked. */
import { useId, useRef, useState } from 'react';
import { Button } from './button';

async function copyText(text: string, fallback: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!fallback) return false;
    fallback.select();
    return document.execCommand('copy');
  }
}

export function CopyButton({ value, label = 'Copy', describedBy }: { value: string; label?: string; describedBy?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <Button
      size="small"
      aria-describedby={describedBy}
      onClick={() => {
        void copyText(value, null).then((ok) => {
          setState(ok ? 'copied' : 'failed');
          window.setTimeout(() => setState('idle'), 2000);
        });
      }}
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : label}
    </Button>
  );
}

/** A value (an id) with a copy button next to it. */
export function CopyableId({ value, label }: { value: string; label: string }) {
  const id = useId();
  return (
    <span className="copyable">
      <code id={id} aria-label={label}>
        {value}
      </code>
      <CopyButton value={value} describedBy={id} label="Copy" />
    </span>
  );
}

/** A secret shown once: full value, copy button, and the plain warning that it will not be shown again. */
export function SecretOnce({ label, value, warning }: { label: string; value: string; warning: string }) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret-once">
      <label htmlFor={id}>{label}</label>
      <div className="secret-row">
        <input id={id} ref={input} className="mono" readOnly value={value} onFocus={(e) => e.currentTarget.select()} data-testid="secret-value" />
        <Button
          variant="primary"
          onClick={() => {
            void copyText(value, input.current).then((ok) => setCopied(ok));
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </Button>
      </div>
      <p className="secret-warning">{warning}</p>
    </div>
  );
}
