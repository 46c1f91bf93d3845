/**
 * NickNotes owns the member's free-form notes about nicks (≤ 4096 characters; an
 * empty note deletes) and relay-bot marks, both per (network, nick) with the nick
 * folded by the network's CASEMAPPING; the stored casing is what was first written
 * (canonical, the interface, "Relay bot mark"). Owns `nick_notes` and `relay_bots`.
 * Every write is announced on `changes` once it is stored: the interface ("Events" 2)
 * pushes nick notes and relay-bot marks to the member's open tabs (MemberEvents.ts).
 * In a cluster, a change made on another node is published here too (`changedElsewhere`,
 * from ClusterEvents), after dropping the relay-bot marks kept in memory.
 * State in PostgreSQL; safe to call concurrently; `changes` is an unbounded PubSub that
 * drops what no one subscribed for.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, PubSub } from "effect"
import { type CaseMapping, foldCase } from "../../irc/CaseMapping.js"

export interface RelayBotMark {
  readonly networkId: number
  readonly nick: string
  readonly marked: boolean
  readonly pattern: string | null
}

/** A network's relay-bot marks, keyed by folded nick. */
export type RelayBotMarks = ReadonlyMap<string, { readonly nick: string; readonly pattern: string | null }>

/** A note or mark as written, for the member's open tabs. */
export type NickNoteChange =
  | { readonly _tag: "NickNote"; readonly networkId: number; readonly nick: string; readonly note: string }
  | { readonly _tag: "RelayBot"; readonly mark: RelayBotMark }

export class NickNotes extends Effect.Service<NickNotes>()("belay/NickNotes", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const changes = yield* PubSub.unbounded<NickNoteChange>()

    const get = Effect.fn("NickNotes.get")(function*(networkId: number, mapping: CaseMapping, nick: string) {
      const rows = yield* sql<{ note: string }>`
        SELECT note FROM nick_notes WHERE network_id = ${networkId} AND nick_folded = ${foldCase(mapping, nick)}`.pipe(
        Effect.orDie
      )
      return rows[0]?.note ?? ""
    })

    const set = Effect.fn("NickNotes.set")(
      function*(networkId: number, mapping: CaseMapping, nick: string, note: string) {
        const folded = foldCase(mapping, nick)
        if (note === "") {
          yield* sql`DELETE FROM nick_notes WHERE network_id = ${networkId} AND nick_folded = ${folded}`.pipe(Effect.orDie)
        } else {
          yield* sql`
            INSERT INTO nick_notes (network_id, nick_folded, nick, note) VALUES (${networkId}, ${folded}, ${nick}, ${note})
            ON CONFLICT (network_id, nick_folded) DO UPDATE SET note = EXCLUDED.note, updated_at = now()`.pipe(Effect.orDie)
        }
        yield* PubSub.publish(changes, { _tag: "NickNote", networkId, nick, note })
      }
    )

    // Read on every history read (recent_messages, search) and written only here, so the
    // marks of each network are kept in memory and dropped whenever a mark changes.
    type Marks = RelayBotMarks
    const marksCache = new Map<number, Marks>()
    // Bumped by every write, so a read that raced a write never caches the old marks.
    let marksGeneration = 0

    /** Relay-bot marks of a network, keyed by folded nick. */
    const relayBots = (networkId: number): Effect.Effect<Marks> => {
      const cached = marksCache.get(networkId)
      if (cached) return Effect.succeed(cached)
      const generation = marksGeneration
      return sql<{ nickFolded: string; nick: string; pattern: string | null }>`
        SELECT nick_folded AS "nickFolded", nick, pattern FROM relay_bots WHERE network_id = ${networkId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const marks: Marks = new Map(rows.map((r) => [r.nickFolded, { nick: r.nick, pattern: r.pattern }] as const))
          if (generation === marksGeneration) marksCache.set(networkId, marks)
          return marks
        })
      )
    }

    /** Mark or clear; returns the mark with the stored (canonical) nick casing. */
    const setRelayBot = Effect.fn("NickNotes.setRelayBot")(
      function*(networkId: number, mapping: CaseMapping, nick: string, marked: boolean, pattern: Option.Option<string>) {
        const folded = foldCase(mapping, nick)
        let mark: RelayBotMark
        if (!marked) {
          const rows = yield* sql<{ nick: string }>`
            DELETE FROM relay_bots WHERE network_id = ${networkId} AND nick_folded = ${folded} RETURNING nick`.pipe(
            Effect.orDie
          )
          mark = { networkId, nick: rows[0]?.nick ?? nick, marked: false, pattern: null }
        } else {
          const rows = yield* sql<{ nick: string; pattern: string | null }>`
            INSERT INTO relay_bots (network_id, nick_folded, nick, pattern)
            VALUES (${networkId}, ${folded}, ${nick}, ${Option.getOrNull(pattern)})
            ON CONFLICT (network_id, nick_folded) DO UPDATE SET pattern = EXCLUDED.pattern, updated_at = now()
            RETURNING nick, pattern`.pipe(Effect.orDie)
          mark = { networkId, nick: rows[0]!.nick, marked: true, pattern: rows[0]!.pattern }
        }
        marksGeneration++
        marksCache.delete(networkId)
        yield* PubSub.publish(changes, { _tag: "RelayBot", mark })
        return mark
      }
    )

    /** A change another node stored (ClusterEvents.ts): its marks are read again, and it is announced here. */
    const changedElsewhere = (change: NickNoteChange): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (change._tag === "RelayBot") {
          marksGeneration++
          marksCache.delete(change.mark.networkId)
        }
        return PubSub.publish(changes, change)
      })

    return { get, set, relayBots, setRelayBot, changes, changedElsewhere } as const
  })
}) {}
