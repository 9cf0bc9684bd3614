import { Badge } from '../../../components/feedback';
import { titleCase } from '../../../lib/format';
import type { SandboxConsumer } from '../api/consumers-api';

export function IdentityBadge({ status }: { status: SandboxConsumer['identity_status'] }) {
  return <Badge tone={status === 'verified' ? 'success' : status === 'failed' ? 'danger' : 'warning'}>{titleCase(status)}</Badge>;
}

export function TierBadge({ tier }: { tier: SandboxConsumer['tier'] }) {
  return tier ? <Badge tone="info">{titleCase(tier)}</Badge> : <span className="muted">Created by API</span>;
}
