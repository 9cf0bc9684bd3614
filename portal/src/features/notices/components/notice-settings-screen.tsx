/**
 * Settings -> Adverse-action notices: what every notice says about the lender (one set for the
 * tenant, used in both environments). Every role reads it; admins (`notices:write`) change it.
 * Save replaces the whole set; the service checks it again (required values, the consumer reporting
 * agency's name and address together) and its message is shown as it comes.
 */
import { useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { ConflictNotice, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { TextAreaField, TextField } from '../../../components/form';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { formatDateTime } from '../../../lib/format';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { useVersionedSave } from '../../../lib/use-versioned-save';
import { noticesApi, type NoticeSettings, type NoticeSettingsInput } from '../api/notices-api';

type Form = Record<keyof NoticeSettingsInput, string>;

const FIELDS: Array<keyof NoticeSettingsInput> = ['creditor_name', 'creditor_address', 'creditor_phone', 'agency', 'cra_name', 'cra_address', 'cra_phone'];

function formOf(settings: NoticeSettings | null): Form {
  return Object.fromEntries(FIELDS.map((f) => [f, settings?.[f] ?? ''])) as Form;
}

/** What Save sends: the values trimmed, an empty optional one as null (not set). */
function inputOf(form: Form): NoticeSettingsInput {
  const optional = (v: string) => v.trim() || null;
  return {
    creditor_name: form.creditor_name.trim(),
    creditor_address: form.creditor_address.trim(),
    creditor_phone: optional(form.creditor_phone),
    agency: form.agency.trim(),
    cra_name: optional(form.cra_name),
    cra_address: optional(form.cra_address),
    cra_phone: optional(form.cra_phone),
  };
}

const WHY = {
  creditor: 'Regulation B requires the notice to give the creditor’s name and address (12 CFR 1002.9(a)(2)). It heads the letter and signs it.',
  agency: 'The federal agency that administers compliance with the Equal Credit Opportunity Act for your organisation: its name and address as Regulation B’s Appendix A gives them for your kind of creditor. It follows the ECOA statement.',
  cra: 'The consumer reporting agency whose reports your credit data comes from (FCRA 615(a), 15 U.S.C. 1681m(a)). Part II of a notice names it whenever a report was used; give its name and address together, or neither.',
} as const;

function SettingsForm({ settings, onSaved }: { settings: NoticeSettings | null; onSaved(saved: NoticeSettings | null): void }) {
  const [form, setForm] = useState(() => formOf(settings));
  /** `conflict`: another admin saved since this screen loaded (their message, until Reload). */
  const { busy, error, conflict, save, reload: reloadAfter } = useVersionedSave('settings_version_conflict');
  const [done, setDone] = useState(false);
  const set = (key: keyof Form) => (e: { target: { value: string } }) => setForm({ ...form, [key]: e.target.value });

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(false);
    // Saved over the version this screen showed: if another admin saved since, the service says who (409).
    await save(async () => {
      onSaved((await noticesApi.saveSettings(inputOf(form), settings?.version ?? 0)).settings);
      setDone(true);
    });
  };

  /** The settings as the other admin saved them, in the form and the page: what is typed here is replaced. */
  const reload = () =>
    reloadAfter(async () => {
      const fresh = (await noticesApi.settings()).settings;
      onSaved(fresh);
      setForm(formOf(fresh));
    });

  // The service is the one judge of what is required (its message names the field); the form
  // does not repeat its rules, so the two cannot disagree.
  return (
    <form onSubmit={submit} noValidate>
      <Card title="Creditor">
        <p className="muted">{WHY.creditor}</p>
        <div className="stack form-narrow">
          <TextField label="Creditor name" autoComplete="organization" value={form.creditor_name} onChange={set('creditor_name')} />
          <TextAreaField label="Creditor address" hint="As it should appear on the letter, one line per line." rows={4} value={form.creditor_address} onChange={set('creditor_address')} />
          <TextField label="Creditor telephone (optional)" type="tel" value={form.creditor_phone} onChange={set('creditor_phone')} />
        </div>
      </Card>
      <Card title="Federal agency">
        <p className="muted">{WHY.agency}</p>
        <div className="stack form-narrow">
          <TextAreaField label="Federal agency name and address" hint="Name on the first line, then the address." rows={5} value={form.agency} onChange={set('agency')} />
        </div>
      </Card>
      <Card title="Consumer reporting agency">
        <p className="muted">{WHY.cra}</p>
        <div className="stack form-narrow">
          <TextField label="Consumer reporting agency name" value={form.cra_name} onChange={set('cra_name')} />
          <TextAreaField label="Consumer reporting agency address" rows={4} value={form.cra_address} onChange={set('cra_address')} />
          <TextField label="Consumer reporting agency telephone" hint="Its toll-free number: required on the notice for a nationwide agency (FCRA 615(a)(3)(A)); notices say when it is missing." type="tel" value={form.cra_phone} onChange={set('cra_phone')} />
        </div>
      </Card>
      {/* Next to Save, where the person who pressed it is looking. */}
      <ConflictNotice message={conflict} what="settings" onReload={() => void reload()} busy={busy} />
      <ErrorNotice error={error} title="Could not save the settings" />
      {done ? <Notice tone="success">Saved. Notices made from now on use these details.</Notice> : null}
      <div className="form-actions">
        {/* Not while a conflict is shown: the same save would be refused again. */}
        <Button type="submit" variant="primary" disabled={busy || conflict !== null}>
          {busy ? 'Saving…' : 'Save settings'}
        </Button>
      </div>
    </form>
  );
}

/** Multi-line text as it will print: one line per line. */
function Lines({ text }: { text: string | null }) {
  if (!text) return <span className="muted">Not set</span>;
  return <span className="pre-line">{text}</span>;
}

function SettingsView({ settings }: { settings: NoticeSettings | null }) {
  return (
    <>
      <Card title="Creditor">
        <p className="muted">{WHY.creditor}</p>
        <DetailList
          items={[
            ['Creditor name', <Lines key="n" text={settings?.creditor_name ?? null} />],
            ['Creditor address', <Lines key="a" text={settings?.creditor_address ?? null} />],
            ['Creditor telephone', <Lines key="p" text={settings?.creditor_phone ?? null} />],
          ]}
        />
      </Card>
      <Card title="Federal agency">
        <p className="muted">{WHY.agency}</p>
        <DetailList items={[['Federal agency name and address', <Lines key="g" text={settings?.agency ?? null} />]]} />
      </Card>
      <Card title="Consumer reporting agency">
        <p className="muted">{WHY.cra}</p>
        <DetailList
          items={[
            ['Consumer reporting agency name', <Lines key="n" text={settings?.cra_name ?? null} />],
            ['Consumer reporting agency address', <Lines key="a" text={settings?.cra_address ?? null} />],
            ['Consumer reporting agency telephone', <Lines key="p" text={settings?.cra_phone ?? null} />],
          ]}
        />
      </Card>
    </>
  );
}

export function NoticeSettingsScreen() {
  const session = useSignedIn();
  const loaded = useAsync(() => noticesApi.settings(), []);
  const [saved, setSaved] = useState<NoticeSettings | null>(null);
  const settings = saved ?? loaded.data?.settings ?? null;
  const canEdit = session.can('notices:write');

  return (
    <>
      <PageHeader
        eyebrow="Settings"
        title="Adverse-action notices"
        description="What every adverse-action notice says about your organisation: the letter you send an applicant after a decline or a counteroffer. One set for sandbox and live."
      />
      <ErrorNotice error={loaded.error} title="Could not load the settings" />
      {loaded.loading && !loaded.data ? <Loading /> : null}
      {loaded.data ? (
        <>
          {!settings && !canEdit ? <Notice tone="warning">Nothing is set yet: notices show placeholders until an admin enters these details.</Notice> : null}
          {settings ? <p className="muted small">Last saved {formatDateTime(settings.updated_at)}.</p> : null}
          {canEdit ? (
            <>
              <p className="muted">The creditor and the federal agency are required. The consumer reporting agency, with its toll-free number, is needed when your decisions use its reports (most do); the creditor's telephone is optional.</p>
              <SettingsForm settings={settings} onSaved={setSaved} />
            </>
          ) : (
            <>
              <Notice tone="info">Your role can read these settings but not change them; an admin can.</Notice>
              <SettingsView settings={settings} />
            </>
          )}
        </>
      ) : null}
    </>
  );
}
