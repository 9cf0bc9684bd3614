/** Form fields: every input has a visible label, hints and errors are tied to it with aria-describedby. */
import { useId, type InputHTMLAttributes, type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes } from 'react';

interface FieldProps {
  label: string;
  hint?: ReactNode;
  error?: string | null;
}

/**
 * A labelled control: the label, the hint above it and the error below it, tied to the control by
 * its id and aria-describedby. Each field kind passes the control itself.
 */
function Field({ label, hint, error, className, control }: FieldProps & { className?: string; control(aria: { id: string; 'aria-describedby'?: string; 'aria-invalid'?: true }): ReactNode }) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field ${className ?? ''}`}>
      <label htmlFor={id}>{label}</label>
      {hint ? (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {control({ id, 'aria-describedby': describedBy, ...(error ? { 'aria-invalid': true as const } : {}) })}
      {error ? (
        <p className="field-error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

export function TextField({ label, hint, error, className, ...input }: FieldProps & InputHTMLAttributes<HTMLInputElement>) {
  return <Field label={label} hint={hint} error={error} className={className} control={(aria) => <input {...aria} {...input} />} />;
}

/** Several lines of free text (an address). */
export function TextAreaField({ label, hint, error, className, rows = 3, ...textarea }: FieldProps & TextareaHTMLAttributes<HTMLTextAreaElement>) {
  return <Field label={label} hint={hint} error={error} className={className} control={(aria) => <textarea rows={rows} {...aria} {...textarea} />} />;
}

export function SelectField({ label, hint, children, className, ...select }: FieldProps & SelectHTMLAttributes<HTMLSelectElement>) {
  const id = useId();
  return (
    <div className={`field ${className ?? ''}`}>
      <label htmlFor={id}>{label}</label>
      {hint ? (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      <select id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...select}>
        {children}
      </select>
    </div>
  );
}

export interface RadioOption<T extends string> {
  value: T;
  label: string;
  description?: string;
}

export function RadioGroup<T extends string>({ legend, name, value, options, onChange }: { legend: string; name: string; value: T; options: RadioOption<NoInfer<T>>[]; onChange(value: NoInfer<T>): void }) {
  const id = useId();
  return (
    <fieldset className="field radio-group">
      <legend>{legend}</legend>
      {options.map((o) => (
        <div className={`radio-option ${value === o.value ? 'is-selected' : ''}`} key={o.value}>
          <input type="radio" id={`${id}-${o.value}`} name={name} value={o.value} checked={value === o.value} onChange={() => onChange(o.value)} />
          <label htmlFor={`${id}-${o.value}`}>
            <span className="radio-label">{o.label}</span>
            {o.description ? <span className="radio-description">{o.description}</span> : null}
          </label>
        </div>
      ))}
    </fieldset>
  );
}

export function Checkbox({ label, ...input }: { label: string } & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  return (
    <div className="checkbox">
      <input type="checkbox" id={id} {...input} />
      <label htmlFor={id}>{label}</label>
    </div>
  );
}
