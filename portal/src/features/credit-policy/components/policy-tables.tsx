/**
 * The structured view of a policy, editable or read-only, per product: BNPL (cut-offs, band and
 * limit per grade, rates per grade and plan, KYC tiers, plan minimums, default plan) and auto loans
 * (cut-offs, band, amount limit and maximum LTV per grade, buy rate by grade and term, used-vehicle
 * adder, dealer markup caps and reserve share, KYC tiers, amount-financed range). The service
 * writes the values back into the JDM decision graph (ADR 0009), so this form never edits JSON.
 */
import { useId, type ReactNode } from 'react';
import { AUTO_LOAN_TERM_BUCKETS, isAutoLoanTables, type AutoLoanPolicyTables, type AutoLoanTermBucket, type BnplPolicyTables, type PolicyTables, type Problem } from '../api/credit-policy-api';

const PLANS = ['pay_in_4', 'pay_in_6', 'monthly'] as const;
const PLAN_LABELS: Record<(typeof PLANS)[number], string> = { pay_in_4: 'Pay in 4', pay_in_6: 'Pay in 6', monthly: 'Monthly' };

function Cell({ label, value, onChange, readOnly, suffix, width = 'medium' }: { label: string; value: string; onChange(v: string): void; readOnly: boolean; suffix?: string; width?: 'narrow' | 'medium' }) {
  const id = useId();
  if (readOnly) return <span className="num">{value === '' ? '—' : `${value}${suffix ?? ''}`}</span>;
  return (
    <span className="cell-input">
      <label htmlFor={id} className="visually-hidden">
        {label}
      </label>
      <input id={id} className={`input-${width}`} value={value} inputMode="decimal" onChange={(e) => onChange(e.target.value)} />
      {suffix ? <span className="muted small">{suffix}</span> : null}
    </span>
  );
}

function Table({ caption, head, children }: { caption: string; head: string[]; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table className="table policy-table">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The structured view of whichever product the tables are for. */
export function PolicyTablesForm({ tables, onChange, readOnly = false }: { tables: PolicyTables; onChange?(next: PolicyTables): void; readOnly?: boolean }) {
  return isAutoLoanTables(tables) ? <AutoLoanTablesForm tables={tables} onChange={onChange} readOnly={readOnly} /> : <BnplTablesForm tables={tables} onChange={onChange} readOnly={readOnly} />;
}

function BnplTablesForm({ tables, onChange, readOnly }: { tables: BnplPolicyTables; onChange?(next: BnplPolicyTables): void; readOnly: boolean }) {
  const update = (edit: (draft: BnplPolicyTables) => void) => {
    const next = structuredClone(tables);
    edit(next);
    onChange?.(next);
  };
  return (
    <div className="policy-tables">
      <h3 className="section-title">Risk grades: cut-offs, bands and limits</h3>
      <p className="muted small">Grades are read from the top: the first whose minimum score the applicant reaches applies. The last grade takes every lower score.</p>
      <Table caption="Risk grades" head={['Grade', 'Minimum score', 'Band', 'Limit (USD)']}>
        {tables.grades.map((g, i) => (
          <tr key={g.grade}>
            <th scope="row">{g.grade}</th>
            <td>
              {g.min_score === null ? (
                <span className="muted">All lower scores</span>
              ) : (
                <Cell
                  label={`Grade ${g.grade} minimum score`}
                  value={String(g.min_score)}
                  readOnly={readOnly}
                  width="narrow"
                  onChange={(v) => update((d) => void (d.grades[i]!.min_score = /^\d+$/.test(v) ? Number(v) : (v as unknown as number)))}
                />
              )}
            </td>
            <td>
              {readOnly ? (
                <span>{g.band}</span>
              ) : (
                <select aria-label={`Grade ${g.grade} band`} value={g.band} onChange={(e) => update((d) => void (d.grades[i]!.band = e.target.value as typeof g.band))}>
                  <option value="approve">approve</option>
                  <option value="refer">refer</option>
                  <option value="decline">decline</option>
                </select>
              )}
            </td>
            <td>
              <Cell label={`Grade ${g.grade} limit`} value={g.limit} readOnly={readOnly} onChange={(v) => update((d) => void (d.grades[i]!.limit = v))} />
            </td>
          </tr>
        ))}
      </Table>

      <h3 className="section-title">Pricing: nominal annual rate by grade and plan</h3>
      <p className="muted small">Percent with two decimals, from 0.00 to 35.99; Pay in 4 is always 0.00. Leave a cell empty to not offer that plan to the grade. Grades without a row are not priced.</p>
      <Table caption="Pricing by grade" head={['Grade', ...PLANS.map((p) => PLAN_LABELS[p])]}>
        {tables.pricing.map((p, i) => (
          <tr key={p.grade}>
            <th scope="row">{p.grade}</th>
            {PLANS.map((plan) => (
              <td key={plan}>
                <Cell label={`Grade ${p.grade} ${PLAN_LABELS[plan]} rate`} value={p[plan] ?? ''} suffix="%" width="narrow" readOnly={readOnly} onChange={(v) => update((d) => void (d.pricing[i]![plan] = v === '' ? null : v))} />
              </td>
            ))}
          </tr>
        ))}
      </Table>

      <div className="grid-3">
        <div>
          <h3 className="section-title">KYC tiers</h3>
          <Table caption="KYC tier thresholds" head={['Tier', 'From (USD)']}>
            <tr>
              <th scope="row">Enhanced</th>
              <td>
                <Cell label="Enhanced tier from" value={tables.kyc_tiers.enhanced_from} readOnly={readOnly} onChange={(v) => update((d) => void (d.kyc_tiers.enhanced_from = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Hard</th>
              <td>
                <Cell label="Hard tier from" value={tables.kyc_tiers.hard_from} readOnly={readOnly} onChange={(v) => update((d) => void (d.kyc_tiers.hard_from = v))} />
              </td>
            </tr>
          </Table>
        </div>
        <div>
          <h3 className="section-title">Plan minimums</h3>
          <Table caption="Plan minimums" head={['Plan', 'Minimum (USD)']}>
            {PLANS.map((plan) => (
              <tr key={plan}>
                <th scope="row">{PLAN_LABELS[plan]}</th>
                <td>
                  <Cell label={`${PLAN_LABELS[plan]} minimum`} value={tables.plan_minimums[plan]} readOnly={readOnly} onChange={(v) => update((d) => void (d.plan_minimums[plan] = v))} />
                </td>
              </tr>
            ))}
          </Table>
        </div>
        <div>
          <h3 className="section-title">Default plan</h3>
          <Table caption="Default plan thresholds" head={['Plan', 'Up to (USD)']}>
            <tr>
              <th scope="row">Pay in 4</th>
              <td>
                <Cell label="Pay in 4 up to" value={tables.default_plan.pay_in_4_up_to} readOnly={readOnly} onChange={(v) => update((d) => void (d.default_plan.pay_in_4_up_to = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Pay in 6</th>
              <td>
                <Cell label="Pay in 6 up to" value={tables.default_plan.pay_in_6_up_to} readOnly={readOnly} onChange={(v) => update((d) => void (d.default_plan.pay_in_6_up_to = v))} />
              </td>
            </tr>
          </Table>
        </div>
      </div>
    </div>
  );
}

const TERM_LABELS: Record<AutoLoanTermBucket, string> = { up_to_48: 'Up to 48 mo', months_60: '60 mo', months_72: '72 mo', months_84: '84 mo' };
const wholeNumber = (v: string): number => (/^\d+$/.test(v) ? Number(v) : (v as unknown as number));

function AutoLoanTablesForm({ tables, onChange, readOnly }: { tables: AutoLoanPolicyTables; onChange?(next: AutoLoanPolicyTables): void; readOnly: boolean }) {
  const update = (edit: (draft: AutoLoanPolicyTables) => void) => {
    const next = structuredClone(tables);
    edit(next);
    onChange?.(next);
  };
  return (
    <div className="policy-tables">
      <h3 className="section-title">Risk grades: cut-offs, bands, amount limits and maximum LTV</h3>
      <p className="muted small">Grades are read from the top: the first whose minimum score the applicant reaches applies. The last grade takes every lower score. An empty maximum LTV lends to no LTV.</p>
      <Table caption="Risk grades" head={['Grade', 'Minimum score', 'Band', 'Amount limit (USD)', 'Maximum LTV']}>
        {tables.grades.map((g, i) => (
          <tr key={g.grade}>
            <th scope="row">{g.grade}</th>
            <td>
              {g.min_score === null ? (
                <span className="muted">All lower scores</span>
              ) : (
                <Cell label={`Grade ${g.grade} minimum score`} value={String(g.min_score)} readOnly={readOnly} width="narrow" onChange={(v) => update((d) => void (d.grades[i]!.min_score = wholeNumber(v)))} />
              )}
            </td>
            <td>
              {readOnly ? (
                <span>{g.band}</span>
              ) : (
                <select aria-label={`Grade ${g.grade} band`} value={g.band} onChange={(e) => update((d) => void (d.grades[i]!.band = e.target.value as typeof g.band))}>
                  <option value="approve">approve</option>
                  <option value="refer">refer</option>
                  <option value="decline">decline</option>
                </select>
              )}
            </td>
            <td>
              <Cell label={`Grade ${g.grade} amount limit`} value={g.limit} readOnly={readOnly} onChange={(v) => update((d) => void (d.grades[i]!.limit = v))} />
            </td>
            <td>
              <Cell
                label={`Grade ${g.grade} maximum LTV`}
                value={g.max_ltv_pct === null ? '' : String(g.max_ltv_pct)}
                suffix="%"
                width="narrow"
                readOnly={readOnly}
                onChange={(v) => update((d) => void (d.grades[i]!.max_ltv_pct = v === '' ? null : wholeNumber(v)))}
              />
            </td>
          </tr>
        ))}
      </Table>

      <h3 className="section-title">Buy rates by grade and term</h3>
      <p className="muted small">Percent with two decimals; with the used-vehicle adder each must stay within 0.00 to 35.99. A grade in the approve band needs a rate for every term; leave a cell empty to not price that term. Grades without a row are not priced.</p>
      <Table caption="Buy rates by grade and term" head={['Grade', ...AUTO_LOAN_TERM_BUCKETS.map((b) => TERM_LABELS[b])]}>
        {tables.buy_rates.map((r, i) => (
          <tr key={r.grade}>
            <th scope="row">{r.grade}</th>
            {AUTO_LOAN_TERM_BUCKETS.map((b) => (
              <td key={b}>
                <Cell label={`Grade ${r.grade} ${TERM_LABELS[b]} buy rate`} value={r[b] ?? ''} suffix="%" width="narrow" readOnly={readOnly} onChange={(v) => update((d) => void (d.buy_rates[i]![b] = v === '' ? null : v))} />
              </td>
            ))}
          </tr>
        ))}
      </Table>

      <div className="grid-3">
        <div>
          <h3 className="section-title">Used vehicles and dealers</h3>
          <Table caption="Used-vehicle adder and dealer terms" head={['Term', 'Percent']}>
            <tr>
              <th scope="row">Used-vehicle adder</th>
              <td>
                <Cell label="Used-vehicle adder" value={tables.used_vehicle_adder} suffix="%" width="narrow" readOnly={readOnly} onChange={(v) => update((d) => void (d.used_vehicle_adder = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Markup cap, up to 60 months</th>
              <td>
                <Cell label="Markup cap up to 60 months" value={tables.markup_caps.up_to_60_months} suffix="%" width="narrow" readOnly={readOnly} onChange={(v) => update((d) => void (d.markup_caps.up_to_60_months = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Markup cap, above 60 months</th>
              <td>
                <Cell label="Markup cap above 60 months" value={tables.markup_caps.above_60_months} suffix="%" width="narrow" readOnly={readOnly} onChange={(v) => update((d) => void (d.markup_caps.above_60_months = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Dealer reserve share</th>
              <td>
                <Cell
                  label="Dealer reserve share"
                  value={String(tables.dealer_reserve_share_pct)}
                  suffix="%"
                  width="narrow"
                  readOnly={readOnly}
                  onChange={(v) => update((d) => void (d.dealer_reserve_share_pct = wholeNumber(v)))}
                />
              </td>
            </tr>
          </Table>
        </div>
        <div>
          <h3 className="section-title">KYC tiers</h3>
          <Table caption="KYC tier thresholds" head={['Tier', 'From (USD)']}>
            <tr>
              <th scope="row">Enhanced</th>
              <td>
                <Cell label="Enhanced tier from" value={tables.kyc_tiers.enhanced_from} readOnly={readOnly} onChange={(v) => update((d) => void (d.kyc_tiers.enhanced_from = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Hard</th>
              <td>
                <Cell label="Hard tier from" value={tables.kyc_tiers.hard_from} readOnly={readOnly} onChange={(v) => update((d) => void (d.kyc_tiers.hard_from = v))} />
              </td>
            </tr>
          </Table>
        </div>
        <div>
          <h3 className="section-title">Amount financed</h3>
          <Table caption="Amount-financed range" head={['Bound', 'USD']}>
            <tr>
              <th scope="row">Minimum</th>
              <td>
                <Cell label="Amount financed minimum" value={tables.amount_financed.min} readOnly={readOnly} onChange={(v) => update((d) => void (d.amount_financed.min = v))} />
              </td>
            </tr>
            <tr>
              <th scope="row">Maximum</th>
              <td>
                <Cell label="Amount financed maximum" value={tables.amount_financed.max} readOnly={readOnly} onChange={(v) => update((d) => void (d.amount_financed.max = v))} />
              </td>
            </tr>
          </Table>
        </div>
      </div>
    </div>
  );
}

/** Every validation problem: where, which rule, what is wrong. */
export function ProblemList({ problems }: { problems: Problem[] }) {
  return (
    <div className="notice notice-danger" role="alert">
      <p className="notice-title">
        {problems.length === 1 ? '1 problem' : `${problems.length} problems`}: the version cannot be saved until each is fixed
      </p>
      <ul className="problem-list" aria-label="Validation problems">
        {problems.map((p) => (
          <li key={`${p.path} ${p.rule} ${p.message}`}>
            <code>{p.path}</code> <span className="badge badge-danger">{p.rule}</span> {p.message}
          </li>
        ))}
      </ul>
    </div>
  );
}
