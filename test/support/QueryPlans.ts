/**
 * QueryPlans reads what a service's statements cost from the plans PostgreSQL executes: every statement an effect
 * sends is captured as compiled (the SQL text and parameters the driver received, through @effect/sql's statement
 * transformer) and run again, in order and in one transaction, those that read `messages` under
 * `EXPLAIN (ANALYZE, FORMAT JSON)` and the others as they are (so planner settings a service makes for the rest
 * of its transaction, `set_config(…, true)`, apply to the replay as they did to the original). Counted: rows read
 * from a table and rows sorted. No timing anywhere.
 *
 * Concurrency rule: the replay holds one connection of the pool for its transaction.
 */
import { SqlClient, Statement } from "@effect/sql"
import { Effect } from "effect"

export type Compiled = readonly [string, ReadonlyArray<unknown>]

export interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Actual Rows": number
  readonly "Actual Loops": number
  readonly "Rows Removed by Filter"?: number
  readonly "Rows Removed by Index Recheck"?: number
  readonly Filter?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** Runs `effect` and returns every statement it sent, compiled exactly as the driver received it. */
export const captured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const statements: Array<Compiled> = []
    const result = yield* effect.pipe(
      Statement.withTransformer((statement) =>
        Effect.sync(() => {
          statements.push(statement.compile())
          return statement
        })
      )
    )
    return { result, statements }
  })

const readsMessages = (text: string) => /\bmessages\b/.test(text)

/** The plans of the statements that read `messages`, replayed in order with the others in one transaction. */
export const messagePlans = (statements: ReadonlyArray<Compiled>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.reduce(statements, [] as ReadonlyArray<PlanNode>, (plans, [text, params]) =>
        readsMessages(text)
          ? Effect.map(
            sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params),
            (rows) => [...plans, rows[0]!["QUERY PLAN"][0]!.Plan]
          )
          : Effect.as(sql.unsafe(text, params), plans))
    ))

export const nodes = (plan: PlanNode): Array<PlanNode> => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

// "Actual Rows" and the removed counts are averages per loop, rounded (PostgreSQL 18 shows fractions of a row), hence
// × loops; over several loops the rounding is off by up to one row a loop, which `slack` says.
const perLoop = (n: number | undefined, node: PlanNode) => Math.round((n ?? 0) * node["Actual Loops"])
const slack = (node: PlanNode) => (node["Actual Loops"] > 1 ? node["Actual Loops"] : 0)

const TABLE_SCANS = new Set(["Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan"])

/** The scans of `relation` in a plan. */
export const scansOf = (plan: PlanNode, relation: string) =>
  nodes(plan).filter((n) => TABLE_SCANS.has(n["Node Type"]) && n["Relation Name"] === relation)

/**
 * Rows of `relation` a plan read (what its table scans returned plus what their filters and rechecks removed), less
 * the rounding slack: the least the plan can have read, so a bound it exceeds was exceeded.
 */
export const rowsRead = (plan: PlanNode, relation: string) =>
  scansOf(plan, relation).reduce((sum, n) =>
    sum + perLoop(n["Actual Rows"], n) + perLoop(n["Rows Removed by Filter"], n) +
    perLoop(n["Rows Removed by Index Recheck"], n) - slack(n), 0)

/** Rows every Sort node of a plan took in, less the rounding slack. */
export const rowsSorted = (plan: PlanNode) =>
  nodes(plan)
    .filter((n) => n["Node Type"] === "Sort")
    .reduce((sum, n) =>
      sum + (n.Plans ?? []).reduce((s, child) => s + perLoop(child["Actual Rows"], child) - slack(child), 0), 0)
