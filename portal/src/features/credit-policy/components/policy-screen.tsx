/** Credit policy: the version in force per product in this environment, and every version kept. */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { Badge, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { Link, navigate } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { creditPolicyApi, type AnyVersion, type ProductPolicy, type StoredVersion } from '../api/credit-policy-api';

export function StatusBadge({ version }: { version: AnyVersion }) {
  if (version.source === 'bundled') return <Badge tone="info">Bundled default</Badge>;
  if (version.status === 'active') return <Badge tone="success">Active</Badge>;
  if (version.status === 'draft') return <Badge tone="warning">Draft</Badge>;
  return <Badge tone="neutral">Retired</Badge>;
}

export function personName(p: { id: string; name: string | null } | null): string {
  return p ? (p.name ?? 'A removed user') : '—';
}

function History({ product }: { product: ProductPolicy }) {
  const environment = useEnvironment();
  const [page, setPage] = useState(1);
  const versions = useAsync(() => creditPolicyApi.versions(environment, product.product, page), [environment, product.product, page]);
  return (
    <Card title="Version history">
      <ErrorNotice error={versions.error} title="Could not load the versions" />
      {versions.loading && !versions.data ? <Loading /> : null}
      {versions.data ? (
        <>
          <DataTable<StoredVersion>
            caption={`${product.label} policy versions`}
            rows={versions.data.data}
            rowKey={(v) => v.id}
            empty={`No versions yet: ${environment} decides with the bundled default ${product.bundled_default}.`}
            columns={[
              { header: 'Version', cell: (v) => <Link to={`/${environment}/credit-policy/${product.product}/versions/${v.id}`}>{v.name}</Link> },
              { header: 'Status', cell: (v) => <StatusBadge version={v} /> },
              { header: 'Note', cell: (v) => v.note ?? <span className="muted">—</span> },
              { header: 'Created', cell: (v) => `${formatDateTime(v.created_at)} by ${personName(v.created_by)}` },
              { header: 'Promoted', cell: (v) => (v.promoted_at ? `${formatDateTime(v.promoted_at)} by ${personName(v.promoted_by)}` : '—') },
            ]}
          />
          <Pagination page={versions.data.page} pageSize={versions.data.page_size} total={versions.data.total} count={versions.data.data.length} onPage={setPage} />
        </>
      ) : null}
    </Card>
  );
}

export function PolicyScreen() {
  const environment = useEnvironment();
  const session = useSignedIn();
  const overview = useAsync(() => creditPolicyApi.overview(environment), [environment]);
  const canWrite = session.can('policy:write');
  return (
    <>
      <PageHeader
        eyebrow="Decisioning"
        title="Credit policy"
        description={`The cut-offs, limits, pricing by risk grade and KYC tier thresholds that decide ${environment} applications. Every version is kept; each decision's engine_version names the one that made it.`}
      />
      <ErrorNotice error={overview.error} title="Could not load the credit policy" />
      {overview.loading && !overview.data ? <Loading /> : null}
      {overview.data?.products.map((p) => (
        <section key={p.product} className="policy-product" aria-label={p.label}>
          <Card
            title={`${p.label}: version in force`}
            actions={
              canWrite ? (
                <Button variant="primary" onClick={() => navigate(`/${environment}/credit-policy/${p.product}/new`)}>
                  Edit policy
                </Button>
              ) : null
            }
          >
            <DetailList
              items={[
                ['Policy version', <span key="v" className="policy-current"><code>{p.current.name}</code> <StatusBadge version={p.current} /></span>],
                ['Scorecard', <code key="s">{p.current.scorecard_version}</code>],
                ['engine_version', <code key="e" className="break">{p.current.engine_version}</code>],
                ['Promoted', p.current.source === 'stored' ? `${formatDateTime(p.current.promoted_at!)} by ${personName(p.current.promoted_by)}` : 'Never: the service default applies until you promote a version'],
                ['Versions kept', String(p.version_count)],
              ]}
            />
            {p.current.source === 'stored' ? (
              <p className="small">
                <Link to={`/${environment}/credit-policy/${p.product}/versions/${p.current.id}`}>View the active version</Link>
              </p>
            ) : null}
          </Card>
          <History product={p} />
        </section>
      ))}
      {!canWrite ? <Notice tone="info">Your role can read the credit policy; only admins can change, test and promote versions.</Notice> : null}
    </>
  );
}
