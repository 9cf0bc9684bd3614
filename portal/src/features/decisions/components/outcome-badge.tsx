import { Badge } from '../../../components/feedback';
import type { Outcome } from '../api/decisions-api';

const TONES = { approved: 'success', declined: 'danger', referred: 'warning', pending: 'info' } as const;
const LABELS = { approved: 'Approved', declined: 'Declined', referred: 'Referred', pending: 'Pending' } as const;

export function OutcomeBadge({ outcome }: { outcome: Outcome }) {
  return <Badge tone={TONES[outcome]}>{LABELS[outcome]}</Badge>;
}

export function productLabel(product: string): string {
  return product === 'bnpl' ? 'BNPL' : product === 'auto_loan' ? 'Auto loan' : product;
}
