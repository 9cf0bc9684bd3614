/**
 * The notice as the letter the applicant receives, on the lines of Regulation B's Sample Form C-1
 * (12 CFR 1002, Appendix C): the creditor's letterhead, the date, the applicant, what was applied
 * for and the action taken, Part I (the principal reasons), Part II (the consumer report and the
 * credit score, when one was used), the ECOA notice and the federal agency. Only this part of the
 * screen prints (components.css, "Adverse-action notice").
 *
 * A setting the lender has not entered shows as a bracketed placeholder ("[creditor name not set]"),
 * so a letter printed before the settings are complete cannot pass for a finished one.
 */
import type { ReactNode } from 'react';
import type { AdverseActionNotice } from '../api/notices-api';
import { letterDate, letterTerms } from './letter-format';

/** The settings a notice can miss, in the words the letter and the warning use. */
export const SETTING_WORDS: Record<string, string> = {
  creditor_name: 'creditor name',
  creditor_address: 'creditor address',
  agency: 'federal agency',
  cra_name: 'consumer reporting agency name',
  cra_address: 'consumer reporting agency address',
  cra_phone: 'consumer reporting agency telephone number',
};

export function settingWords(name: string): string {
  return SETTING_WORDS[name] ?? name.replace(/_/g, ' ');
}

/** Where a value is missing: bracketed, so nobody takes the letter for finished. */
function Placeholder({ children }: { children: ReactNode }) {
  return <span className="letter-missing">[{children}]</span>;
}

function NotSet({ setting }: { setting: string }) {
  return <Placeholder>{settingWords(setting)} not set</Placeholder>;
}

/** A name (when `name` is given, even null) and address block, each line on its own line. */
function AddressBlock({ name, whenNoName, lines, whenNoLines, phone, className }: { name?: string | null; whenNoName?: ReactNode; lines: string[]; whenNoLines: ReactNode; phone?: string | null; className?: string }) {
  return (
    <address className={`letter-address ${className ?? ''}`}>
      {name === undefined ? null : <span className="letter-line letter-name">{name ?? whenNoName}</span>}
      {lines.length > 0 ? (
        lines.map((line, i) => (
          <span className="letter-line" key={i}>
            {line}
          </span>
        ))
      ) : (
        <span className="letter-line">{whenNoLines}</span>
      )}
      {phone ? <span className="letter-line">Telephone: {phone}</span> : null}
    </address>
  );
}

/** A reason's wording, with its code small beside it for the lender (not printed: the applicant reads the words). */
function Reason({ code, children }: { code: string; children: ReactNode }) {
  return (
    <li>
      {children} <span className="letter-code">{code}</span>
    </li>
  );
}

function Opening({ notice }: { notice: AdverseActionNotice }) {
  const applied = letterTerms(notice.application);
  return (
    <>
      <p>Dear {notice.applicant?.name ?? 'applicant'}:</p>
      <p>
        Thank you for your application of {letterDate(notice.application.applied_on)} for {applied}.
      </p>
      {notice.action === 'declined' ? (
        <p>We are sorry to tell you that we have declined your application.</p>
      ) : (
        <>
          <p>
            We are unable to offer you the credit you applied for. We can offer you instead{' '}
            {notice.counteroffer ? letterTerms(notice.counteroffer) : 'credit on other terms'}.
          </p>
          <p>If you do not accept our offer, this notice applies to your application.</p>
        </>
      )}
    </>
  );
}

function CreditScore({ score }: { score: NonNullable<NonNullable<AdverseActionNotice['consumer_report']>['credit_score']> }) {
  return (
    <div className="letter-score">
      <p>{score.statement}</p>
      <dl className="letter-facts">
        <div>
          <dt>Your credit score</dt>
          <dd>{score.score}</dd>
        </div>
        {score.range ? (
          <div>
            <dt>Scores range</dt>
            <dd>
              from {score.range.min} to {score.range.max}
            </dd>
          </div>
        ) : null}
        {score.scored_on ? (
          <div>
            <dt>Date</dt>
            <dd>{letterDate(score.scored_on)}</dd>
          </div>
        ) : null}
      </dl>
      {score.key_factors.length > 0 ? (
        <>
          <p id="letter-key-factors">Key factors that adversely affected your credit score:</p>
          <ol className="letter-list" aria-labelledby="letter-key-factors">
            {score.key_factors.map((f) => (
              <Reason key={f.code} code={f.code}>
                {f.reason ?? f.code}
              </Reason>
            ))}
          </ol>
        </>
      ) : null}
    </div>
  );
}

function PartTwo({ report }: { report: NonNullable<AdverseActionNotice['consumer_report']> }) {
  return (
    <section className="letter-part" aria-labelledby="letter-part-2">
      <h2 id="letter-part-2">Part II: Disclosure of use of information obtained from an outside source</h2>
      <p>{report.statement}</p>
      <AddressBlock name={report.agency.name} whenNoName={<NotSet setting="cra_name" />} lines={report.agency.address_lines} whenNoLines={<NotSet setting="cra_address" />} phone={report.agency.phone} />
      {report.credit_score ? <CreditScore score={report.credit_score} /> : null}
    </section>
  );
}

export function NoticeLetter({ notice }: { notice: AdverseActionNotice }) {
  const { creditor } = notice;
  return (
    <article className="notice-letter" aria-label="Notice letter">
      {/* Printed too (unlike the screen's banner): a sandbox letter on paper must not pass for a real one. */}
      {notice.environment === 'sandbox' ? <p className="letter-sandbox-mark">Sandbox test notice: not for mailing</p> : null}
      <AddressBlock
        className="letter-letterhead"
        name={creditor.name}
        whenNoName={<NotSet setting="creditor_name" />}
        lines={creditor.address_lines}
        whenNoLines={<NotSet setting="creditor_address" />}
        phone={creditor.phone}
      />
      <p className="letter-date">{letterDate(notice.notice_date)}</p>
      {/* The service sends no applicant when it finds no consumer record: say so rather than leave a blank. */}
      {notice.applicant ? (
        <AddressBlock className="letter-recipient" name={notice.applicant.name} lines={notice.applicant.address_lines} whenNoLines={<Placeholder>applicant&rsquo;s address not on file</Placeholder>} />
      ) : (
        <p className="letter-recipient">
          <Placeholder>applicant not on file</Placeholder>
        </p>
      )}
      <Opening notice={notice} />
      <section className="letter-part" aria-labelledby="letter-part-1">
        <h2 id="letter-part-1">Part I: {notice.principal_reasons.heading}</h2>
        <ol className="letter-list">
          {notice.principal_reasons.reasons.map((r) => (
            <Reason key={r.code} code={r.code}>
              {r.reason}
            </Reason>
          ))}
        </ol>
      </section>
      {notice.consumer_report ? <PartTwo report={notice.consumer_report} /> : null}
      <section className="letter-part letter-ecoa" aria-labelledby="letter-ecoa">
        {/* Named for screen readers' heading list; the model form prints the notice without a heading. */}
        <h2 id="letter-ecoa" className="visually-hidden">
          Equal Credit Opportunity Act notice
        </h2>
        <p>{notice.ecoa_notice.statement}</p>
        <AddressBlock lines={notice.ecoa_notice.agency_lines} whenNoLines={<NotSet setting="agency" />} />
      </section>
      <p className="letter-closing">Sincerely,</p>
      <p>{creditor.name ?? <NotSet setting="creditor_name" />}</p>
    </article>
  );
}
