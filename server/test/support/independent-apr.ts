/**
 * An APR recomputation for tests that shares no code with server/src/modules/offers: it handles the
 * two schedule kinds our plans produce (every 14 days from the decision date, or the decision date's
 * day of month, clamped) where Appendix J counts each payment k as exactly k unit-periods, and solves
 * sum P_k / (1 + i)^k = A by bisection.
 */
export function independentApr(amountFinanced: string, decisionDate: string, schedule: Array<{ due_date: string; amount: string }>): number {
  const cents = (s: string) => Math.round(Number(s) * 100);
  const A = cents(amountFinanced);
  const payments = schedule.map((p) => cents(p.amount));
  const total = payments.reduce((a, b) => a + b, 0);
  if (total === A) return 0;
  const day = (d: string) => Date.parse(`${d}T00:00:00Z`) / 86_400_000;
  const biweekly = schedule.every((p, k) => day(p.due_date) - day(decisionDate) === 14 * (k + 1));
  const perYear = biweekly ? 26 : 12;
  const pv = (i: number) => payments.reduce((sum, p, k) => sum + p / Math.pow(1 + i, k + 1), 0);
  let lo = 0;
  let hi = 1;
  for (let n = 0; n < 200; n++) {
    const mid = (lo + hi) / 2;
    if (pv(mid) > A) lo = mid;
    else hi = mid;
  }
  return ((lo + hi) / 2) * perYear * 100;
}
