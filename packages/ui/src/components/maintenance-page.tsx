import type { AdminApi } from '../api.js';

/** Maintenance: each registered table, its schedule, its last runs, and "Run now". */
export function MaintenancePage(_props: { api: AdminApi; params: URLSearchParams }) {
  return (
    <section aria-labelledby="maintenance-title">
      <h2 id="maintenance-title">Maintenance</h2>
      <p class="hint">Table maintenance is not available on this node yet.</p>
    </section>
  );
}
