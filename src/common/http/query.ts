/**
 * Query integers are decimal digits only (DESIGN §3: malformed list values get 400, nothing is guessed):
 * "10" becomes 10; "1e1", "0x10", " 5" and "" stay strings and fail @IsInt. Use with @Transform.
 */
export const strictInt = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value;

/** Query booleans are exactly "true" or "false"; anything else stays a string and fails @IsBoolean. Use with @Transform. */
export const strictBool = ({ value }: { value: unknown }): unknown => (value === 'true' ? true : value === 'false' ? false : value);
