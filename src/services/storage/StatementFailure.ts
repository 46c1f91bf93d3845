/**
 * StatementFailure: what a failed statement's cause says about it, for the MessageWriter's retry decisions. Pure
 * functions over `Cause<SqlError>`; no state.
 *
 * - `answered`: the server answered with a SQLSTATE (PostgreSQL Appendix A), so the statement ended on the server and,
 *   run on its own (autocommit), did not commit. Anything else (the connection dropped, refused, timed out) may have
 *   come before or after the commit: the outcome is unknown.
 * - `classify`: 23503 foreign_key_violation is an orphan (a buffer or network removed meanwhile); classes 22 (data
 *   exception), 23 (integrity constraint violation) and 54 (program limit exceeded) fail again on every retry;
 *   anything else (connection loss, 57P01 admin shutdown, 53xxx resources, a missing table during an upgrade, a bug)
 *   may heal, so it is retried.
 */
import type { SqlError } from "@effect/sql"
import { Cause, Option } from "effect"

export type Failure = "orphan" | "refused" | "transient"

const SQLSTATE = /^[0-9A-Z]{5}$/

/** The driver's error under the SqlError, when there is one. */
const inner = (cause: Cause.Cause<SqlError.SqlError>): unknown => {
  const failure = Cause.failureOption(cause)
  return Option.isNone(failure) ? undefined : failure.value.cause
}

const field = (value: unknown, name: "code" | "constraint"): string | undefined => {
  if (typeof value !== "object" || value === null || !(name in value)) return undefined
  const found: unknown = (value as Record<typeof name, unknown>)[name]
  return typeof found === "string" ? found : undefined
}

/** The SQLSTATE of a failed statement, when PostgreSQL gave one (Node's own codes, e.g. ECONNRESET, are not). */
export const sqlState = (cause: Cause.Cause<SqlError.SqlError>): string | undefined => {
  const code = field(inner(cause), "code")
  return code !== undefined && SQLSTATE.test(code) ? code : undefined
}

/** The constraint PostgreSQL named in the error (unique and foreign-key violations name theirs). */
export const violatedConstraint = (cause: Cause.Cause<SqlError.SqlError>): string | undefined =>
  field(inner(cause), "constraint")

/** The server answered, so the statement did not commit; otherwise its outcome is unknown. */
export const answered = (cause: Cause.Cause<SqlError.SqlError>): boolean => sqlState(cause) !== undefined

export const classify = (cause: Cause.Cause<SqlError.SqlError>): Failure => {
  const code = sqlState(cause)
  if (code === "23503") return "orphan"
  if (code !== undefined && /^(22|23|54)[0-9A-Z]{3}$/.test(code)) return "refused"
  return "transient"
}

/** The database's own words for a failure (SqlError's message is generic), for the logs. */
export const describeFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return Cause.pretty(cause)
  const error = failure.value
  const driver: unknown = typeof error === "object" && error !== null && "cause" in error ? error.cause : error
  if (driver instanceof Error) {
    const code = "code" in driver && typeof driver.code === "string" ? ` (${driver.code})` : ""
    return `${driver.message}${code}`
  }
  return String(driver)
}
