/**
 * Why local retention keeps events it would otherwise delete, in words for the Tier health
 * panel: `tierStatus.erasureHoldSeq`, the oldest erasure record some tier location has not
 * applied yet. Undefined when nothing is held (null, or a node too old to say).
 */
export function erasureHoldText(seq: number | null | undefined): string | undefined {
  if (seq === null || seq === undefined) return undefined;
  return `from seq ${seq}: an erasure not yet applied to every tier location (retention keeps it and what follows)`;
}

/**
 * Why the sweep tiers no further than a seq, in words: `tierStatus.heldByStandbys`, the
 * standbys of a cluster leader that hold its log only that far (a leader tiers only what every
 * reachable standby holds). Undefined when nothing is held back (null, or a node too old to say).
 */
export function standbyHoldText(held: { throughSeq: number; nodes: string[]; notApplying?: string[] } | null | undefined): string | undefined {
  if (held === null || held === undefined) return undefined;
  const who = held.nodes.length === 1 ? `standby ${held.nodes[0] ?? ''}` : `standbys ${held.nodes.join(', ')}`;
  const text = `through seq ${held.throughSeq}: ${who} ${held.nodes.length === 1 ? 'holds' : 'hold'} no more of the log yet (the leader tiers only what every reachable standby holds)`;
  const stuck = held.notApplying ?? [];
  if (stuck.length === 0) return text;
  const which = stuck.length === 1 ? `standby ${stuck[0] ?? ''} keeps asking for entries it was sent without applying them: see its log` : `standbys ${stuck.join(', ')} keep asking for entries they were sent without applying them: see their logs`;
  return `${text}; ${which} (a node of an older version cannot apply a newer leader's records: upgrade it)`;
}

/**
 * Why local retention keeps tiered-looking events, in words: `tierStatus.retentionHeldByTerm`,
 * the entries under the watermark that a later term than the watermark's ordered (a leader that
 * tiered alone died; its successor ordered its own events under those seqs). Undefined when
 * nothing is held so (null, or a node too old to say).
 */
export function termHoldText(held: { throughSeq: number; watermarkSeq: number } | null | undefined): string | undefined {
  if (held === null || held === undefined) return undefined;
  return `after seq ${held.throughSeq}: this log's entries up to the watermark's seq ${held.watermarkSeq} were ordered in a later term than the tier's, so retention keeps them until the sweep finds the tier's entries in this log, or an admin adopts the tier (Last error names how)`;
}
