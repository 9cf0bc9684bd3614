/** Sandbox consumers: the seeded three first, then any your sandbox calls created; searched and paged by the service. */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { CopyableId } from '../../../components/copy';
import { ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Checkbox, TextField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import { useEnvironment } from '../../../lib/environment';
import { Link, setQuery, useLocation } from '../../../lib/router';
import { useAsync } from '../../../lib/use-async';
import { consumersApi } from '../api/consumers-api';
import { IdentityBadge, TierBadge } from './consumer-badges';

export function ConsumersScreen() {
  const environment = useEnvironment();
  const { query } = useLocation();
  const search = query.get('search') ?? '';
  const seeded = query.get('seeded') === 'true';
  const page = Number(query.get('page') ?? '1') || 1;
  const [input, setInput] = useState(search);
  const consumers = useAsync(() => (environment === 'sandbox' ? consumersApi.list({ page, ...(search ? { search } : {}), ...(seeded ? { seeded: 'true' } : {}) }) : Promise.resolve(null)), [environment, search, seeded, page]);

  if (environment === 'live') {
    return (
      <>
        <PageHeader title="Sandbox consumers" description="Test consumers exist only in the sandbox." />
        <Notice tone="info" title="You are in the live environment">
          <p>
            Live consumers are real people and are not listed here. <Link to="/sandbox/consumers">Switch to the sandbox consumers</Link>.
          </p>
        </Notice>
      </>
    );
  }

  return (
    <>
      <PageHeader
        eyebrow="Sandbox"
        title="Sandbox consumers"
        description="Send a consumer_id in the consumer object to use one. The three seeded consumers cover the soft, enhanced and hard verification paths."
      />
      <Card title="Consumers">
        <form
          className="filters"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ search: input.trim() || null, page: null });
          }}
        >
          <TextField label="Search" type="search" placeholder="Name, email or consumer id" value={input} onChange={(e) => setInput(e.target.value)} />
          <div className="filters-submit">
            <Button type="submit" size="small">
              Search
            </Button>
          </div>
          <Checkbox label="Seeded consumers only" checked={seeded} onChange={(e) => setQuery({ seeded: e.target.checked ? 'true' : null, page: null })} />
        </form>
        <ErrorNotice error={consumers.error} title="Could not load consumers" />
        {consumers.data ? (
          <>
            <DataTable
              caption="Sandbox consumers"
              rows={consumers.data.data}
              rowKey={(c) => c.id}
              empty="No consumers match."
              columns={[
                { header: 'Name', cell: (c) => <Link to={`/sandbox/consumers/${c.id}`}>{c.name}</Link> },
                { header: 'Consumer ID', cell: (c) => <CopyableId value={c.id} label={`Consumer ID of ${c.name}`} /> },
                { header: 'Tier', cell: (c) => <TierBadge tier={c.tier} /> },
                { header: 'Identity', cell: (c) => <IdentityBadge status={c.identity_status} /> },
                { header: 'Linked accounts', cell: (c) => c.linked_accounts.length },
              ]}
            />
            <Pagination page={consumers.data.page} pageSize={consumers.data.page_size} total={consumers.data.total} count={consumers.data.data.length} onPage={(p) => setQuery({ page: String(p) })} />
          </>
        ) : (
          <Loading />
        )}
      </Card>
    </>
  );
}
