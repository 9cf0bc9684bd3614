/**
 * The fields of Add dealer and Edit dealer: name, license number, state. The service validates
 * again (name 1-200 characters, license number up to 50, a USPS code); the form checks the same
 * rules first so a person sees the problem next to the field instead of after a round trip.
 */
import { useState } from 'react';
import { SelectField, TextField } from '../../../components/form';
import type { Dealer, DealerInput } from '../api/dealers-api';
import { US_STATES } from './us-states';

export const NAME_MAX = 200;
export const LICENSE_MAX = 50;

export function useDealerForm(initial?: Dealer) {
  const [name, setName] = useState(initial?.name ?? '');
  const [licenseNumber, setLicenseNumber] = useState(initial?.license_number ?? '');
  const [state, setState] = useState(initial?.state ?? '');
  const [touched, setTouched] = useState(false);
  const value: DealerInput = { name: name.trim(), license_number: licenseNumber.trim() || null, state: state || null };
  const nameError = value.name === '' ? 'Enter the dealership’s name.' : value.name.length > NAME_MAX ? `At most ${NAME_MAX} characters.` : null;
  const licenseError = (value.license_number ?? '').length > LICENSE_MAX ? `At most ${LICENSE_MAX} characters.` : null;
  /** Only what differs from the dealer being edited (PATCH semantics). */
  const changes = (): Partial<DealerInput> => {
    if (!initial) return value;
    const out: Partial<DealerInput> = {};
    if (value.name !== initial.name) out.name = value.name;
    if (value.license_number !== initial.license_number) out.license_number = value.license_number;
    if (value.state !== initial.state) out.state = value.state;
    return out;
  };
  return {
    name,
    setName,
    licenseNumber,
    setLicenseNumber,
    state,
    setState,
    value,
    changes,
    valid: nameError === null && licenseError === null,
    errors: { name: touched ? nameError : null, license: touched ? licenseError : null },
    touch: () => setTouched(true),
    /** Start again from `dealer` as it now is (after a reload): what the person typed is dropped. */
    reset: (dealer: Dealer) => {
      setName(dealer.name);
      setLicenseNumber(dealer.license_number ?? '');
      setState(dealer.state ?? '');
      setTouched(false);
    },
  };
}

export function DealerFields({ form }: { form: ReturnType<typeof useDealerForm> }) {
  return (
    <div className="stack">
      <TextField label="Dealer name" required maxLength={NAME_MAX + 20} autoComplete="organization" value={form.name} error={form.errors.name} onChange={(e) => form.setName(e.target.value)} onBlur={form.touch} />
      <TextField
        label="License number (optional)"
        hint="The dealer license your state issued, as printed on it."
        maxLength={LICENSE_MAX + 20}
        value={form.licenseNumber}
        error={form.errors.license}
        onChange={(e) => form.setLicenseNumber(e.target.value)}
        onBlur={form.touch}
      />
      <SelectField label="State (optional)" hint="Where the dealership is licensed." value={form.state} onChange={(e) => form.setState(e.target.value)}>
        <option value="">Not recorded</option>
        {US_STATES.map(([code, name]) => (
          <option key={code} value={code}>
            {code} · {name}
          </option>
        ))}
      </SelectField>
    </div>
  );
}
