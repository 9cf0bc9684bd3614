/**
 * How the letter writes dates and money. The rest of the portal writes ISO dates and "1250.00 USD"
 * for lenders; a letter to an applicant reads "December 3, 2026" and "$1,250.00". Dates are the
 * service's UTC calendar days, so they are formatted in UTC (a local zone could move them a day).
 */
const LETTER_DATE = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });

/** '2026-12-03' -> 'December 3, 2026'. */
export function letterDate(isoDay: string): string {
  return LETTER_DATE.format(new Date(`${isoDay}T00:00:00Z`));
}

/**
 * '1250.00', 'USD' -> '$1,250.00': the service's two-decimal string regrouped, never through a
 * binary float. The service lends in USD only; another currency keeps its code.
 */
export function letterMoney(amount: string, currency: string): string {
  const [whole = '', cents = '00'] = amount.split('.');
  const grouped = `${whole.replace(/\B(?=(\d{3})+$)/g, ',')}.${cents}`;
  return currency === 'USD' ? `$${grouped}` : `${grouped} ${currency}`;
}

/**
 * What was applied for or offered, as the letter says it: the service's product and terms phrases
 * ("a buy now, pay later loan", "in 4 payments every two weeks": one source for that wording)
 * around the amount written as a letter writes it.
 */
export function letterTerms(t: { product: string; amount: string; currency: string; terms: string | null }): string {
  return `${t.product} of ${letterMoney(t.amount, t.currency)}${t.terms ? `, ${t.terms}` : ''}`;
}
