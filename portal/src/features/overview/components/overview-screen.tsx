/** Overview: where to start, and a first call to copy (with a seeded consumer of this sandbox). */
import { Badge, Notice } from '../../../components/feedback';
import { Card, PageHeader } from '../../../components/page';
import { useEnvironment } from '../../../lib/environment';
import { Link } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { overviewApi } from '../api/overview-api';

export function OverviewScreen() {
  const environment = useEnvironment();
  const session = useSignedIn();
  const consumers = useAsync(() => (environment === 'sandbox' && session.can('consumers:read') ? overviewApi.seededConsumers() : Promise.resolve(null)), [environment]);
  const soft = consumers.data?.data.find((c) => c.tier === 'soft');
  const origin = window.location.origin;

  return (
    <>
      <PageHeader title={`Welcome, ${session.user.name.split(' ')[0]}`} description={`${session.tenant.name} · signed in as ${session.user.email}`} />
      {environment === 'live' ? (
        <Notice tone="warning" title="You are looking at live settings">
          Live keys and endpoints handle real applicants. Try changes in the sandbox first.
        </Notice>
      ) : null}
      <div className="grid-3">
        <Card title="1. Get an API key">
          <p>Generate a {environment} key under Settings. It is shown once; keep it on your server.</p>
          <Link to={`/${environment}/api-keys`} className="card-link">
            API keys →
          </Link>
        </Card>
        <Card title="2. Receive webhooks">
          <p>Add an HTTPS endpoint, send it a test event, and verify the Svc-Signature header.</p>
          <Link to={`/${environment}/webhooks`} className="card-link">
            Webhooks →
          </Link>
        </Card>
        <Card title="3. Make a decision">
          <p>Use a seeded sandbox consumer to see every path: soft, enhanced and hard verification.</p>
          <Link to="/sandbox/consumers" className="card-link">
            Sandbox consumers →
          </Link>
        </Card>
      </div>
      {environment === 'sandbox' ? (
        <Card title="Your first call">
          <p>
            A soft-tier decision for the seeded returning customer {soft ? <Badge tone="info">{soft.name}</Badge> : null}, completed in the response:
          </p>
          <pre className="code-block" aria-label="Example request">{`curl ${origin}/v1/decisions/bnpl \\
  -H "Authorization: Bearer $SANDBOX_KEY" \\
  -H "Content-Type: application/json" \\
  -H "Idempotency-Key: $(uuidgen)" \\
  -d '{"consumer":{"consumer_id":"${soft?.id ?? '<consumer_id>'}"},
       "transaction":{"amount":"120.00","currency":"USD",
                      "merchant_name":"Acme Outdoor","merchant_category":"sporting_goods"}}'`}</pre>
        </Card>
      ) : null}
    </>
  );
}
