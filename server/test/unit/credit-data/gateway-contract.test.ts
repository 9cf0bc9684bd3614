import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { CreditSubject } from '../../../src/modules/credit-data/credit-data.types.js';
import {
  buildGatewayRequest,
  creditFilesUrl,
  emptyCreditFile,
  gatewaySourceName,
  interpretGatewayResponse,
  parseGatewayBaseUrl,
  parseWireCreditFile,
  type WireCreditFile,
} from '../../../src/modules/credit-data/gateway-contract.js';

const context = { source: 'gateway:gw.example.com', requestId: '0b8f7e8e-6c1a-4c55-9d1e-3f0c1f6f7a10' };

const wire: WireCreditFile = {
  file_id: 'gwf_0001',
  tradelines: 12,
  oldest_tradeline_months: 97,
  revolving_utilization_pct: 123,
  delinquencies_30d_last_24m: 1,
  delinquencies_90d_last_24m: 0,
  collections_or_judgments: 2,
  bankruptcy: false,
  foreclosure_or_repossession: true,
  inquiries_last_6m: 3,
  monthly_obligations_cents: 84_500,
  estimated_monthly_income_cents: 612_000,
};

const answer = (status: number, body: unknown) =>
  interpretGatewayResponse(status, typeof body === 'string' ? body : JSON.stringify(body), context);

const subject: CreditSubject = {
  consumerId: '6f1c1d0e-9a9b-4a47-8c53-0d7d1b0e2f11',
  firstName: 'Philomena',
  lastName: 'Quackenbush',
  dob: '1979-03-14',
  ssnLast4: '7395',
  zip: '30341',
  sandboxProfile: null,
};

describe('gateway request', () => {
  it('maps the subject to the snake_case body and leaves out internal fields', () => {
    expect(buildGatewayRequest('req-1', subject)).toEqual({
      request_id: 'req-1',
      subject: { first_name: 'Philomena', last_name: 'Quackenbush', dob: '1979-03-14', ssn_last4: '7395', zip: '30341' },
    });
    expect(buildGatewayRequest('req-1', { ...subject, ssnLast4: null }).subject.ssn_last4).toBeNull();
  });

  it('posts under any path prefix of the base URL', () => {
    expect(creditFilesUrl(parseGatewayBaseUrl('https://gw.example.com')).href).toBe('https://gw.example.com/v1/credit-files');
    expect(creditFilesUrl(parseGatewayBaseUrl('https://gw.example.com:8443/bureau/')).href).toBe(
      'https://gw.example.com:8443/bureau/v1/credit-files',
    );
    expect(gatewaySourceName(parseGatewayBaseUrl('https://gw.example.com:8443/x'))).toBe('gateway:gw.example.com');
  });

  it('refuses base URLs that are not plain https', () => {
    for (const raw of ['http://gw.example.com', 'not a url', 'https://u:p@gw.example.com', 'https://gw.example.com/?a=1', 'https://gw.example.com/#x']) {
      expect(() => parseGatewayBaseUrl(raw), raw).toThrow(RangeError);
    }
  });
});

describe('gateway response', () => {
  it('maps a 200 file from snake_case to the CreditFile', () => {
    expect(answer(200, { file: wire })).toEqual({
      kind: 'file',
      file: {
        fileId: 'gwf_0001',
        source: 'gateway:gw.example.com',
        hasFile: true,
        tradelines: 12,
        oldestTradelineMonths: 97,
        revolvingUtilizationPct: 123,
        delinquencies30dLast24m: 1,
        delinquencies90dLast24m: 0,
        collectionsOrJudgments: 2,
        bankruptcy: false,
        foreclosureOrRepossession: true,
        inquiriesLast6m: 3,
        monthlyObligationsCents: 84_500,
        estimatedMonthlyIncomeCents: 612_000,
      },
    });
  });

  it('ignores unknown fields and accepts has_file: true', () => {
    const result = answer(200, { file: { ...wire, has_file: true, score_hint: 'x' }, trace: 'abc' });
    expect(result.kind).toBe('file');
  });

  it('turns 404 no_file into an empty file, with the gateway file_id or else our request id', () => {
    expect(answer(404, { error: 'no_file', message: 'none' })).toEqual({
      kind: 'file',
      file: emptyCreditFile(context.requestId, context.source),
    });
    const withId = answer(404, { error: 'no_file', file_id: 'gwf_nf_9' });
    expect(withId.kind === 'file' && withId.file).toMatchObject({ fileId: 'gwf_nf_9', hasFile: false, tradelines: 0 });
    expect(answer(404, { error: 'no_file', file_id: 42 }).kind).toBe('failed');
  });

  it('does not read a bare or foreign 404 as "no file"', () => {
    for (const body of ['<html>Not Found</html>', { error: 'not_found' }, {}, '']) {
      expect(answer(404, body)).toMatchObject({ kind: 'failed', gatewayHealthy: false });
    }
  });

  it.each([
    ['tradelines', -1, 'tradelines must be a non-negative integer'],
    ['tradelines', 1.5, 'tradelines must be a non-negative integer'],
    ['tradelines', '12', 'tradelines must be a non-negative integer'],
    ['monthly_obligations_cents', 2 ** 53, 'monthly_obligations_cents must be a non-negative integer'],
    ['inquiries_last_6m', null, 'inquiries_last_6m must be a non-negative integer'],
    ['inquiries_last_6m', undefined, 'inquiries_last_6m is missing'],
    ['bankruptcy', 'false', 'bankruptcy must be a boolean'],
    ['bankruptcy', 0, 'bankruptcy must be a boolean'],
    ['file_id', '', 'file_id must be 1-128 printable ASCII characters'],
    ['file_id', 'a b', 'file_id must be 1-128 printable ASCII characters'],
    ['file_id', 'x'.repeat(129), 'file_id must be 1-128 printable ASCII characters'],
    ['has_file', false, 'has_file must be true or absent'],
  ])('rejects %s = %j', (field, value, problem) => {
    const result = answer(200, { file: { ...wire, [field]: value } });
    expect(result).toMatchObject({ kind: 'failed', gatewayHealthy: false });
    expect(result.kind === 'failed' && result.detail).toContain(problem);
  });

  it('rejects bodies that are not a JSON object with a file object', () => {
    for (const body of ['{"file": ', '[]', 'null', '{}', '{"file": []}', '{"file": "x"}']) {
      expect(answer(200, body), body).toMatchObject({ kind: 'failed', gatewayHealthy: false });
    }
  });

  it('reports every problem field but caps the list', () => {
    const result = parseWireCreditFile({}, context.source);
    expect(result.ok).toBe(false);
    const detail = answer(200, { file: {} });
    expect(detail.kind === 'failed' && detail.detail).toMatch(/and \d+ more$/);
  });

  it('normalises -0 to 0', () => {
    const result = interpretGatewayResponse(200, JSON.stringify({ file: wire }).replace('"delinquencies_90d_last_24m":0', '"delinquencies_90d_last_24m":-0'), context);
    expect(result.kind === 'file' && Object.is(result.file.delinquencies90dLast24m, 0)).toBe(true);
  });

  it('classifies error statuses: request-specific ones do not count against the gateway', () => {
    expect(answer(400, { error: 'invalid_request' })).toEqual({
      kind: 'failed',
      detail: 'gateway answered HTTP 400 (invalid_request)',
      gatewayHealthy: true,
    });
    expect(answer(409, { error: 'request_id_conflict' })).toMatchObject({ gatewayHealthy: true });
    for (const status of [401, 403, 429, 500, 502, 503, 504, 301]) {
      expect(answer(status, { error: 'internal_error' }), String(status)).toMatchObject({ kind: 'failed', gatewayHealthy: false });
    }
    expect(answer(500, 'oops')).toMatchObject({ detail: 'gateway answered HTTP 500' });
  });

  it('never echoes what the gateway sent, only field names and listed codes', () => {
    const pii = 'Philomena Quackenbush 1979-03-14 7395';
    const details = [
      answer(500, { error: pii, message: pii }),
      answer(401, { error: 'unauthorized', message: pii }),
      answer(200, { file: { ...wire, tradelines: pii, file_id: pii, bankruptcy: pii } }),
      answer(200, pii),
      answer(404, { error: 'no_file', file_id: pii }),
    ].map((r) => (r.kind === 'failed' ? r.detail : ''));
    expect(details[0]).toBe('gateway answered HTTP 500 (unlisted error code)');
    for (const detail of details) {
      expect(detail).not.toBe('');
      for (const piece of pii.split(' ')) expect(detail).not.toContain(piece);
    }
  });

  it('never throws and never leaks a planted value, whatever the body', () => {
    const marker = 'Zq7PII';
    const jsonValue = fc.jsonValue().map((v) => JSON.stringify(v).replaceAll('"', `"${marker}`));
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 599 }), fc.oneof(fc.string(), jsonValue), (status, body) => {
        const result = interpretGatewayResponse(status, body, context);
        if (result.kind === 'failed') expect(result.detail).not.toContain(marker);
      }),
    );
  });
});
