/**
 * Why local retention keeps events it would otherwise delete, in words for the Tier health
 * panel: `tierStatus.erasureHoldSeq`, the oldest erasure record some tier location has not
 * applied yet. Undefined when nothing is held (null, or a node too old to say).
 */
export function erasureHoldText(seq: number | null | undefined): string | undefined {
  if (seq === null || seq === undefined) return undefined;
  return `from seq ${seq}: an erasure not yet applied to every tier location (retention keeps it and what follows)`;
}
