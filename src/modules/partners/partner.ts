/** A partner as other modules and the admin API see it (webhook settings are the webhooks module's). */
export interface Partner {
  id: string;
  slug: string;
  name: string;
  defaultCurrency: string;
  allowedExpiryMinutes: number[];
  defaultExpiryMinutes: number;
  createdAt: Date;
}

export interface PartnerSettings {
  name: string;
  defaultCurrency: string;
  allowedExpiryMinutes: number[];
  defaultExpiryMinutes: number;
}
