/**
 * Verification review: failed hard-tier verifications and uploaded documents (the hard tier's ID
 * document, documents an underwriter requested) waiting for the lender, oldest first. Documents
 * open only on request ("View", recorded in the decision's history) and only for roles with
 * documents:read; images show inline, PDFs open in a new tab. Underwriters and admins mark each
 * item accepted or rejected.
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { Dialog } from '../../../components/dialog';
import { Badge, EmptyState, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { SelectField, TextField } from '../../../components/form';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { Pagination } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime, titleCase } from '../../../lib/format';
import { Link, setQuery, useLocation } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { verificationReviewApi, type ReviewDocument, type ReviewFilter, type ReviewItem } from '../api/verification-review-api';

function StatusBadge({ item }: { item: ReviewItem }) {
  const tone = item.status === 'accepted' ? 'success' : item.status === 'rejected' ? 'danger' : 'warning';
  return <Badge tone={tone}>{item.status === 'pending' ? 'Awaiting review' : titleCase(item.status)}</Badge>;
}

function ReviewCard({ item, onChanged }: { item: ReviewItem; onChanged(message: string): void }) {
  const environment = useEnvironment();
  const session = useSignedIn();
  const [viewing, setViewing] = useState<ReviewDocument | null>(null);
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const short = item.decision_id.slice(0, 8);
  const review = async (result: 'accepted' | 'rejected') => {
    setBusy(true);
    setError(null);
    try {
      await verificationReviewApi.review(environment, item.decision_id, { result, note: note.trim() || null, expected_version: item.version });
      onChanged(`Verification of decision ${short} marked ${result}.`);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card title={`Decision ${short}`} actions={<StatusBadge item={item} />}>
      <DetailList
        items={[
          ['Decision', <Link key="d" to={`/${environment}/referrals/${item.decision_id}`}>{item.decision_id}</Link>],
          ['Why it is here', item.verification_failed ? 'Hard-tier identity verification failed' : 'Document uploaded'],
          ['Verification', `${titleCase(item.kyc_tier)} tier${item.verification_state ? `, ${titleCase(item.verification_state)}` : ''}`],
          ['Decision outcome', titleCase(item.outcome ?? 'pending')],
          ['Waiting since', formatDateTime(item.opened_at)],
          ...(item.reviewed_at ? ([['Reviewed', `${formatDateTime(item.reviewed_at)}${item.review_note ? `: ${item.review_note}` : ''}`]] as Array<[string, string]>) : []),
        ]}
      />
      {item.documents.length === 0 ? <p className="muted small">No document was uploaded.</p> : null}
      <ul className="plain-list">
        {item.documents.map((d) => (
          <li key={d.id}>
            <strong>{titleCase(d.document_type)}</strong> <span className="muted small">{d.content_type}, {Math.ceil(d.size_bytes / 1024)} KB, uploaded {formatDateTime(d.uploaded_at)}</span>{' '}
            {session.can('documents:read') ? (
              <Button size="small" onClick={() => setViewing(d)} aria-label={`View ${titleCase(d.document_type)} of decision ${short}`}>
                View
              </Button>
            ) : (
              <span className="muted small">(underwriters and admins can view it)</span>
            )}
          </li>
        ))}
      </ul>
      <ErrorNotice error={error} />
      {item.status === 'pending' && session.can('referrals:act') ? (
        <div className="stack">
          <TextField label={`Review note for decision ${short} (optional)`} value={note} maxLength={1000} onChange={(e) => setNote(e.target.value)} />
          <div className="page-actions">
            <Button variant="primary" disabled={busy} onClick={() => void review('accepted')}>
              Accept
            </Button>
            <Button variant="danger" disabled={busy} onClick={() => void review('rejected')}>
              Reject
            </Button>
          </div>
        </div>
      ) : null}
      <Dialog open={viewing !== null} title={viewing ? `${titleCase(viewing.document_type)} of decision ${short}` : 'Document'} onClose={() => setViewing(null)} footer={<Button variant="primary" onClick={() => setViewing(null)}>Close</Button>}>
        {viewing ? (
          viewing.content_type === 'application/pdf' ? (
            <p>
              <a href={verificationReviewApi.documentUrl(environment, viewing.id)} target="_blank" rel="noopener noreferrer">
                Open the PDF in a new tab
              </a>
            </p>
          ) : (
            <img className="document-view" src={verificationReviewApi.documentUrl(environment, viewing.id)} alt={`${titleCase(viewing.document_type)} uploaded by the applicant`} />
          )
        ) : null}
        <p className="muted small">Opening a document is recorded in the decision's history.</p>
      </Dialog>
    </Card>
  );
}

export function VerificationReviewScreen() {
  const environment = useEnvironment();
  const { query } = useLocation();
  const status = (query.get('status') ?? 'pending') as ReviewFilter;
  const page = Number(query.get('page') ?? '1') || 1;
  const list = useAsync(() => verificationReviewApi.list(environment, status, page), [environment, status, page]);
  const [message, setMessage] = useState<string | null>(null);
  return (
    <>
      <PageHeader title="Verification review" description="Failed hard-tier identity verifications and uploaded documents for the lender to review, oldest first." />
      {message ? <Notice tone="success">{message}</Notice> : null}
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <SelectField label="Show" value={status} onChange={(e) => setQuery({ status: e.target.value === 'pending' ? null : e.target.value, page: null })}>
          <option value="pending">Awaiting review</option>
          <option value="reviewed">Reviewed</option>
          <option value="all">All</option>
        </SelectField>
      </form>
      <ErrorNotice error={list.error} title="Could not load the review queue" />
      {list.data ? (
        <>
          {list.data.data.length === 0 ? <EmptyState title="Nothing to review">Failed hard-tier verifications and uploaded documents appear here.</EmptyState> : null}
          {list.data.data.map((item) => (
            <ReviewCard
              key={`${item.decision_id}:${item.version}`}
              item={item}
              onChanged={(m) => {
                setMessage(m);
                list.reload();
              }}
            />
          ))}
          <Pagination page={list.data.page} pageSize={list.data.page_size} total={list.data.total} count={list.data.data.length} onPage={(p) => setQuery({ page: String(p) })} />
        </>
      ) : (
        <Loading />
      )}
    </>
  );
}
