/**
 * What the system tests of real IRC clients through Belay's listener check outside the client: how many times a
 * channel line is stored, and whether the server shows the member away (the listener's auto-away,
 * docs/contract.md "The IRC client listener"). Each call opens and closes its own connection; no state.
 */
import { Effect } from "effect"
import pg from "pg"
import type { Peer } from "./Ngircd.js"

/** How many stored privmsgs of `channel` carry `text`. */
export const storedCount = (databaseUrl: string, channel: string, text: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      const result = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM messages m JOIN buffers b ON b.id = m.buffer_id
          WHERE b.target_folded = $1 AND m.kind = 'privmsg' AND m.text = $2`,
        [channel, text]
      )
      return Number(result.rows[0]?.n ?? 0)
    } finally {
      await client.end()
    }
  })

/** The away message WHOIS shows for `nick` on the server, as the peer asks it (301), or null when not away. */
export const awayMessage = (other: Peer, nick: string) =>
  Effect.gen(function*() {
    yield* other.send(`WHOIS ${nick}`)
    const line = yield* other.waitFor((l) => new RegExp(` (301|318) \\S+ ${nick} `).test(l))
    return / 301 /.test(line) ? line.slice(line.indexOf(" :", line.indexOf(" 301 ")) + 2) : null
  })

/** How many lines of `text` match `pattern`. */
export const occurrences = (text: string, pattern: RegExp) => text.split("\n").filter((l) => pattern.test(l)).length
