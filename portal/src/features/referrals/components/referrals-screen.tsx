/**
 * The referral queue: referred decisions, oldest referral first, paged by the service. The
 * applicant is masked (initials, masked email and phone); each row opens the decision to work it.
 */
import { ErrorNotice, Loading } from '../../../components/feedback';
import { Card, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { Link, setQuery, useLocation } from '../../../lib/router';
import { useAsync } from '../../../lib/use-async';
import { referralsApi } from '../api/referrals-api';

export function ReferralsScreen() {
  const environment = useEnvironment();
  const { query } = useLocation();
  const page = Number(query.get('page') ?? '1') || 1;
  const list = useAsync(() => referralsApi.list(environment, page), [environment, page]);
  return (
    <>
      <PageHeader title="Referral queue" description="Decisions the engine referred to a person, oldest first. Open one to approve, decline, request documents or add a condition." />
      <Card title="Referred decisions">
        <ErrorNotice error={list.error} title="Could not load the queue" />
        {list.data ? (
          <>
            <DataTable
              caption="Referred decisions"
              rows={list.data.data}
              rowKey={(r) => r.decision_id}
              empty="Nothing to review: no referred decisions in this environment."
              columns={[
                { header: 'Referred', cell: (r) => formatDateTime(r.referred_at) },
                { header: 'Applicant', cell: (r) => (r.applicant ? <span>{r.applicant.initials} <span className="muted small">{r.applicant.email}</span></span> : '—') },
                { header: 'Amount', cell: (r) => `${r.requested_amount} ${r.currency}` },
                { header: 'Score', cell: (r) => r.score ?? '—' },
                { header: 'Grade', cell: (r) => r.risk_grade ?? '—' },
                { header: 'Reasons', cell: (r) => <span className="mono small">{r.reasons.map((x) => x.code).join(', ')}</span> },
                {
                  header: 'Decision',
                  className: 'col-actions',
                  cell: (r) => (
                    <Link to={`/${environment}/referrals/${r.decision_id}`} aria-label={`Open referral of ${r.applicant?.initials ?? 'applicant'} for ${r.requested_amount}`}>
                      Open
                    </Link>
                  ),
                },
              ]}
            />
            <Pagination page={list.data.page} pageSize={list.data.page_size} total={list.data.total} count={list.data.data.length} onPage={(p) => setQuery({ page: String(p) })} />
          </>
        ) : (
          <Loading />
        )}
      </Card>
    </>
  );
}
