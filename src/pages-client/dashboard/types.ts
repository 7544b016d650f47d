/** GET /dashboard/api/me (DESIGN §5, §8), the fields the pages read. */
export interface Me {
  merchant_id: string;
  display_name: string | null;
  business_name: string | null;
  email: string | null;
  phone: string | null;
  website: string | null;
  instagram: string | null;
  industry: string | null;
  country: string | null;
  display_currency: string | null;
  wallet_address: string | null;
  disabled: boolean;
  test_mode: boolean;
  handle: string | null;
  handle_url: string | null;
  email_enabled?: boolean;
  sms_enabled?: boolean;
}

export interface Notification {
  kind: string;
  channel: string;
  to: string;
  status: string;
  sent_at: string | null;
}

/** A dashboard item: spec §2.1 plus DESIGN §8's fields. */
export interface DashboardRequest {
  request_id: string;
  status: string;
  proof_status: string;
  pay_page_url: string;
  expires_at: string;
  created_at: string;
  proof_verified_at: string | null;
  tx_hash: string | null;
  /** Base units of the token, as the partner sees it; GET /dashboard/api/assets says how to read it. */
  amount: string;
  asset_id: string;
  fiat_amount: number;
  fiat_currency: string;
  source: string;
  plan_id: string | null;
  period_index: number | null;
  memo: string | null;
  customer_name: string | null;
  customer_email: string | null;
  customer_phone: string | null;
  notifications?: Notification[];
}

/** One token of GET /dashboard/api/assets. */
export interface TokenAsset {
  asset_id: string;
  symbol: string;
  decimals: number;
}

export interface RequestPage {
  requests: DashboardRequest[];
  has_more: boolean;
  limit: number;
  offset: number;
}
