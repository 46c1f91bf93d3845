/**
 * What the web client's browser tests share: the page's landmarks found by role and accessible name (the "Buffers"
 * navigation, the `log`, the "Message" textbox), a wait for a field's value, and a query of the test's database.
 */
import { Effect } from "effect"
import pg from "pg"
import type { Locator, Page } from "playwright-core"

/** Waits in the page: ngircd paces every client (its penalty), so lines take seconds. */
export const WAIT = 30_000

export const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

export const log = (page: Page) => page.getByRole("log")
export const buffers = (page: Page) => page.getByRole("navigation", { name: "Buffers" })
export const composer = (page: Page) => page.getByRole("textbox", { name: "Message" })

/** Resolves once the field shows `value`; throws after WAIT with what it showed. */
export const expectValue = async (locator: Locator, value: string) => {
  const deadline = Date.now() + WAIT
  for (;;) {
    const now = await locator.inputValue()
    if (now === value) return
    if (Date.now() > deadline) throw new Error(`expected ${JSON.stringify(value)}, found ${JSON.stringify(now)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Runs `sql` against the test's database (the one `bin/belay serve` uses). */
export const query = (url: string, sql: string, params: ReadonlyArray<unknown> = []) =>
  promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(sql, [...params])).rows as Array<Record<string, unknown>>
    } finally {
      await client.end()
    }
  })
