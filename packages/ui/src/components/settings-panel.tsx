import { useState } from 'preact/hooks';
import type { AdminApi, SettingsAnswer } from '../api.js';
import { changedSettings, fieldOfError, formValues, type SettingField, type SettingValues } from '../settings-form.js';
import { HiddenCharactersNote, ShownText } from './shown-text.js';
import { useChanged } from '../use-changed.js';

export interface SettingsPanelProps {
  api: AdminApi;
  settings: SettingsAnswer;
  onSaved: (next: SettingsAnswer) => void;
  /** The runtime settings this form edits, in display order. */
  fields: readonly SettingField[];
  title: string;
  /** Names the form (its class and heading id), e.g. `storage-panel`. */
  name: string;
}

/**
 * A form over some runtime settings (Storage & Retention, the maintenance schedule), saved
 * through the settings API. A refused save (400) shows the server's message verbatim beside the
 * field it names, and nothing is saved.
 */
export function SettingsPanel({ api, settings, onSaved, fields, title, name }: SettingsPanelProps) {
  const [stored, setStored] = useState<SettingValues>(() => formValues(fields, settings));
  const [values, setValues] = useState<SettingValues>(stored);
  const [error, setError] = useState<{ key: string | undefined; message: string } | undefined>();
  const [status, setStatus] = useState('');
  const [saving, setSaving] = useState(false);

  // A new settings answer (a save, here or in another form) resets the form.
  useChanged(settings, () => {
    const next = formValues(fields, settings);
    setStored(next);
    setValues(next);
  });

  const save = async (e: Event) => {
    e.preventDefault();
    const changes = changedSettings(fields, stored, values);
    if (Object.keys(changes).length === 0) {
      setStatus('Nothing changed');
      return;
    }
    setSaving(true);
    setStatus('');
    setError(undefined);
    try {
      const next = await api.saveSettings(changes);
      // Saved, with something the operator should know (no standby confirmed it on a cluster,
      // or turning tiering off lets retention delete deferred records): in the server's words.
      setStatus(typeof next.warning === 'string' ? `Saved, with a warning: ${next.warning}` : 'Saved');
      onSaved(next);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      setError({ key: fieldOfError(fields, message, values['audit.tier.mode'] ?? String(settings['audit.tier.mode'])), message });
    } finally {
      setSaving(false);
    }
  };

  const mode = values['audit.tier.mode'];
  return (
    <form class={`settings-form ${name}`} onSubmit={(e) => void save(e)} aria-labelledby={`${name}-title`}>
      <h3 id={`${name}-title`}>{title}</h3>
      {fields.map((field) => {
        // Targets of other modes stay editable but are dimmed: they are kept, not used.
        const idle = (field.key === 'audit.tier.iceberg.table' && mode !== 'iceberg') || ((field.key === 'audit.tier.parquet.path' || field.key === 'audit.tier.connectionId') && mode !== 'parquet');
        const id = `setting-${field.key.replaceAll('.', '-')}`;
        const errorHere = error !== undefined && error.key === field.key;
        const set = (value: string) => setValues({ ...values, [field.key]: value });
        return (
          <div class={`field${idle ? ' idle' : ''}`} key={field.key} data-setting={field.key}>
            <label for={id}>{field.label}</label>
            {field.kind === 'boolean' ? (
              <input id={id} type="checkbox" checked={values[field.key] === 'true'} onChange={(e) => set(String(e.currentTarget.checked))} />
            ) : field.kind === 'select' ? (
              <select id={id} value={values[field.key]} onChange={(e) => set(e.currentTarget.value)}>
                {field.options.map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : field.kind === 'number' ? (
              <input
                id={id}
                type="number"
                min={field.min}
                step={field.step}
                {...('max' in field ? { max: field.max } : {})}
                value={values[field.key]}
                aria-invalid={errorHere}
                aria-describedby={errorHere ? `${id}-error` : `${id}-help`}
                onInput={(e) => set(e.currentTarget.value)}
              />
            ) : (
              <input
                id={id}
                type="text"
                value={values[field.key]}
                aria-invalid={errorHere}
                aria-describedby={errorHere ? `${id}-error` : `${id}-help`}
                onInput={(e) => set(e.currentTarget.value)}
              />
            )}
            <small id={`${id}-help`} class="help">
              {field.help}
            </small>
            {field.kind === 'text' && <HiddenCharactersNote value={values[field.key] ?? ''} />}
            {errorHere && (
              <p id={`${id}-error`} class="field-error" role="alert">
                <ShownText text={error.message} />
              </p>
            )}
          </div>
        );
      })}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={saving}>
          {saving ? 'Saving…' : 'Save'}
        </button>
        <button type="button" disabled={saving} onClick={() => setValues(stored)}>
          Reset
        </button>
        <span role="status">{status}</span>
      </div>
      {error !== undefined && error.key === undefined && (
        <p class="field-error" role="alert">
          <ShownText text={error.message} />
        </p>
      )}
    </form>
  );
}
