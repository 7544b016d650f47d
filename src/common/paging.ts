/** The partner API's list paging (spec): `limit` defaults to 50 and may be at most 100 (101 is a 400). */
export const PAGE_DEFAULT = 50;
export const PAGE_MAX = 100;
