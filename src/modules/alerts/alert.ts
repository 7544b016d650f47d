/**
 * The kinds of alert; each names a condition the service cannot resolve on its own. `claim_unmovable` may
 * clear by itself (a later reorg frees the index): finality then stamps it resolved.
 */
export const ALERT_KINDS = ['verified_reorged', 'claim_unmovable'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Alert {
  id: string;
  kind: AlertKind;
  requestId: string | null;
  details: Record<string, unknown>;
  createdAt: Date;
  resolvedAt: Date | null;
}

export interface NewAlert {
  kind: AlertKind;
  requestId: string | null;
  details: Record<string, unknown>;
}
