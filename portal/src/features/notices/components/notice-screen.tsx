/**
 * One decision's adverse-action notice, ready to print and mail: the letter (notice-letter.tsx),
 * and around it, on screen only, what the lender needs before mailing it: Print, the last day to
 * send it, which settings are still missing, and in the sandbox that this is a test notice.
 *
 * Opening the screen makes the notice (a POST: it reveals the applicant's name and address, and
 * the service records each reveal in the decision's history), once per opening.
 */
import { useRef } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { PageHeader } from '../../../components/page';
import { useEnvironment } from '../../../lib/environment';
import { Link } from '../../../lib/router';
import { useAsync } from '../../../lib/use-async';
import { noticesApi, type AdverseActionNotice } from '../api/notices-api';
import { letterDate } from './letter-format';
import { NoticeLetter, settingWords } from './notice-letter';

/** 'a, b and c'. */
function inWords(items: string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function SendBy({ notice }: { notice: AdverseActionNotice }) {
  // ISO days compare as strings. An underwriter's decline can come after the day already (the 30
  // days run from the completed application, not from the decline).
  const overdue = notice.due_by < notice.notice_date;
  return (
    <Notice tone={overdue ? 'warning' : 'info'} title={overdue ? `Overdue: due by ${letterDate(notice.due_by)}` : `Send by ${letterDate(notice.due_by)}`}>
      <p>
        {notice.action === 'declined'
          ? 'Regulation B gives 30 days from the completed application to notify the applicant of a decline (12 CFR 1002.9(a)(1)(i)); counted from the decision, a day early.'
          : 'Owed only if the applicant does not take the counteroffer: within 90 days of it (12 CFR 1002.9(a)(1)(iv)); counted a day early.'}
      </p>
    </Notice>
  );
}

function NotReady({ missing, incomplete }: { missing: string[]; incomplete: string[] }) {
  const environment = useEnvironment();
  if (missing.length === 0 && incomplete.length === 0) return null;
  return (
    <Notice tone="warning" title="This notice is not ready to mail">
      {missing.length > 0 ? (
        <p>
          Not set yet: {inWords(missing.map(settingWords))}. The letter marks each place in brackets. An admin enters them in{' '}
          <Link to={`/${environment}/settings/notices`}>Settings: Adverse-action notices</Link>.
        </p>
      ) : null}
      {incomplete.includes('principal_reasons') ? (
        <p>The principal reasons are missing: this counteroffer was made before the service recorded a counteroffer&rsquo;s reasons. Add them to the letter before mailing it.</p>
      ) : null}
    </Notice>
  );
}

export function NoticeScreen({ id }: { id: string }) {
  const environment = useEnvironment();
  // React's StrictMode runs a new screen's effects twice in development; each POST is recorded as
  // a reveal of the applicant, so both runs share the one request made for this decision.
  const made = useRef<{ key: string; request: Promise<{ notice: AdverseActionNotice }> } | null>(null);
  const result = useAsync(() => {
    const key = `${environment}/${id}`;
    if (made.current?.key !== key) made.current = { key, request: noticesApi.make(environment, id) };
    return made.current.request;
  }, [environment, id]);
  const notice = result.data?.notice ?? null;
  const decisionPath = `/${environment}/decisions/${id}`;

  return (
    <>
      <div className="screen-only">
        <PageHeader
          eyebrow={<Link to={decisionPath}>Decision</Link>}
          title="Adverse-action notice"
          description="The letter to the applicant after a decline or a counteroffer, on the lines of Regulation B's Sample Form C-1. Print it or save it as PDF from the print dialog; only the letter prints."
          actions={
            <>
              <Button variant="primary" disabled={!notice} onClick={() => window.print()}>
                Print
              </Button>
              <Link className="btn btn-secondary" to={decisionPath}>
                Back to the decision
              </Link>
            </>
          }
        />
        <ErrorNotice error={result.error} title={result.error?.status === 404 ? 'No notice for this decision' : 'Could not make the notice'} />
        {result.loading && !notice ? <Loading label="Making the notice…" /> : null}
        {notice ? (
          <>
            {notice.environment === 'sandbox' ? <Notice tone="warning" title="Sandbox: a test notice, not for mailing" /> : null}
            <SendBy notice={notice} />
            <NotReady missing={notice.missing_settings} incomplete={notice.incomplete} />
          </>
        ) : null}
      </div>
      {notice ? <NoticeLetter notice={notice} /> : null}
    </>
  );
}
