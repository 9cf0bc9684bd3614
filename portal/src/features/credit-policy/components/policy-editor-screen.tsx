/**
 * New policy version: start from the version in force (or the one in ?base=), edit it in the
 * structured view or as raw JSON (typed or uploaded), validate, and save it as a draft. Saving
 * validates again on the server; a draft is tested and promoted from its own page.
 */
import { useEffect, useState } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { TextField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { Link, navigate, useLocation } from '../../../lib/router';
import { useAsync } from '../../../lib/use-async';
import { creditPolicyApi, type DraftInput, type PolicyTables, type Problem } from '../api/credit-policy-api';
import { PolicyTablesForm, ProblemList } from './policy-tables';

type Mode = 'structured' | 'json';

export function PolicyEditorScreen({ product }: { product: string }) {
  const environment = useEnvironment();
  const { query } = useLocation();
  const baseId = query.get('base');
  const base = useAsync(() => (baseId ? creditPolicyApi.get(environment, product, baseId) : creditPolicyApi.current(environment, product)), [environment, product, baseId]);
  const [mode, setMode] = useState<Mode>('structured');
  const [tables, setTables] = useState<PolicyTables | null>(null);
  const [json, setJson] = useState('');
  const [note, setNote] = useState('');
  const [problems, setProblems] = useState<Problem[] | null>(null);
  const [valid, setValid] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  useEffect(() => {
    if (!base.data) return;
    setTables(base.data.tables);
    setJson(JSON.stringify(base.data.document, null, 2));
    if (!base.data.tables) setMode('json');
  }, [base.data]);

  const input = (): DraftInput => ({
    ...(mode === 'structured' ? { tables: tables!, base_version_id: baseId } : { document_json: json }),
    note: note.trim() === '' ? null : note.trim(),
  });
  const changed = () => {
    setProblems(null);
    setValid(false);
  };

  const validate = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await creditPolicyApi.validate(environment, product, input());
      setProblems(r.problems);
      setValid(r.valid);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await creditPolicyApi.create(environment, product, input());
      navigate(`/${environment}/credit-policy/${product}/versions/${r.version.id}?saved=1`);
    } catch (err) {
      const apiError = err as ApiError;
      // The 422 lists every problem in its message; Validate shows them as a list.
      if (apiError.code === 'invalid_policy') await validate();
      else setError(apiError);
    } finally {
      setBusy(false);
    }
  };
  const upload = async (file: File | undefined) => {
    if (!file) return;
    setJson(await file.text());
    setMode('json');
    changed();
  };

  return (
    <>
      <nav className="breadcrumb" aria-label="Breadcrumb">
        <Link to={`/${environment}/credit-policy`}>Credit policy</Link> / New version
      </nav>
      <PageHeader
        title="New policy version"
        description={base.data ? `Starting from ${base.data.version.name}. Saving stores a draft: nothing changes for decisions until you test and promote it.` : undefined}
      />
      <ErrorNotice error={base.error} title="Could not load the base version" />
      {base.loading && !base.data ? <Loading /> : null}
      {base.data ? (
        <>
          <div className="tabs" role="tablist" aria-label="Editor">
            <button type="button" role="tab" aria-selected={mode === 'structured'} className="tab" disabled={!tables} onClick={() => setMode('structured')}>
              Structured
            </button>
            <button type="button" role="tab" aria-selected={mode === 'json'} className="tab" onClick={() => setMode('json')}>
              Raw JSON (JDM)
            </button>
          </div>
          {!base.data.tables ? <Notice tone="info" title="Raw JSON only">{`This version cannot be shown in the structured view: ${base.data.tables_unavailable_reason ?? ''}`}</Notice> : null}
          <Card>
            {mode === 'structured' && tables ? (
              <PolicyTablesForm
                tables={tables}
                onChange={(next) => {
                  setTables(next);
                  changed();
                }}
              />
            ) : (
              <div className="field">
                <label htmlFor="policy-json">JDM decision graph</label>
                <p className="field-hint" id="policy-json-hint">
                  The whole GoRules JDM document. It opens in GoRules&apos; editor too; keep the <code>policyConstants</code> node and the outputs of the Policy result node. Its version, tenant and environment are set when it is saved.
                </p>
                <textarea
                  id="policy-json"
                  className="code-input"
                  aria-describedby="policy-json-hint"
                  spellCheck={false}
                  rows={24}
                  value={json}
                  onChange={(e) => {
                    setJson(e.target.value);
                    changed();
                  }}
                />
                <label className="upload">
                  <span>Upload a JDM file</span>
                  <input type="file" accept="application/json,.json" onChange={(e) => void upload(e.target.files?.[0])} />
                </label>
              </div>
            )}
            <TextField label="Note (optional)" hint="What changed and why, for the version history." value={note} maxLength={500} onChange={(e) => setNote(e.target.value)} />
          </Card>
          <ErrorNotice error={error} title="Could not save" />
          {problems && problems.length > 0 ? <ProblemList problems={problems} /> : null}
          {valid ? <Notice tone="success" title="Valid">The document passed every check: it loads, evaluates over the sample battery and its outputs are in range.</Notice> : null}
          <div className="form-actions">
            <Button onClick={() => void validate()} disabled={busy}>
              {busy ? 'Checking…' : 'Validate'}
            </Button>
            <Button variant="primary" onClick={() => void save()} disabled={busy}>
              Save draft
            </Button>
          </div>
        </>
      ) : null}
    </>
  );
}
