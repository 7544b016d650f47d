/** Postgres unique_violation (23505), optionally of one named constraint; TypeORM's QueryFailedError carries the driver's code. */
export function isUniqueViolation(e: unknown, constraint?: string): boolean {
  const err = e as { code?: string; constraint?: string };
  return err?.code === '23505' && (constraint === undefined || err.constraint === constraint);
}

/** Postgres foreign_key_violation (23503): the referenced row (a partner, a merchant) does not exist. */
export function isForeignKeyViolation(e: unknown): boolean {
  return (e as { code?: string })?.code === '23503';
}

/** Postgres check_violation (23514) of the named check or rule (a CHECK constraint, or a trigger raising it by name). */
export function isCheckViolation(e: unknown, constraint: string): boolean {
  const err = e as { code?: string; constraint?: string };
  return err?.code === '23514' && err.constraint === constraint;
}

/** Postgres lock_not_available (55P03): a lock waited longer than the transaction's lock_timeout. */
export function isLockTimeout(e: unknown): boolean {
  return (e as { code?: string })?.code === '55P03';
}

/** Postgres deadlock_detected (40P01): this transaction was chosen to end a lock cycle and was rolled back. */
export function isDeadlock(e: unknown): boolean {
  return (e as { code?: string })?.code === '40P01';
}

/**
 * Runs `transaction` again when Postgres rolled it back to end a deadlock, `attempts` times in all: a
 * transaction that locks in another order than a concurrent one (a plan, then its charge, against a charge,
 * then its plan) is simply run again on what is stored then. Any other error, or the last deadlock, is thrown.
 */
export async function retryingDeadlocks<T>(attempts: number, transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (e) {
      if (!isDeadlock(e) || attempt >= attempts) throw e;
    }
  }
}
