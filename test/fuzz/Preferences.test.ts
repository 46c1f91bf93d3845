/**
 * Hostile input against what the member chooses (docs/contract.md "Preferences"), on the whole app in this process
 * (the listener on a fake upstream, real database): generated bodies for `PUT /api/buffers/{n}/{target}/preferences`
 * and `PUT /api/preferences/client` — hostile JSON, wrong types, extra fields, odd targets and ids — and generated
 * `METADATA` lines from an IRC client with draft/metadata-2. Every answer is held to the contract: HTTP 200 only for a
 * body the contract accepts, else 400/404 (413 past the body limit) with a JSON error, never 5xx; every IRC answer is a reply the extension
 * names (761, 766, 770–772, BATCH, METADATA, FAIL METADATA …, 461); the client is still served afterwards; and the
 * store holds only valid rows, no more than were accepted, the client document always within its bounds.
 *
 * Reproducible: fast-check with a fixed seed (FUZZ_SEED overrides it; FUZZ_RUNS the number of cases per surface).
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import fc from "fast-check"
import { validTarget } from "../../src/services/preferences/BufferPreferences.js"
import { CLIENT_DOCUMENT_BYTES, readClientDocument } from "../../src/schema/Preferences.js"
import { passwordToken } from "../http/auth/MemberHarness.js"
import { CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"
import { encodeJson, hostileJson, hostileString } from "./support/HostileValues.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 424242
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Math.ceil(Number(process.env.FUZZ_RUNS) / 10) : 1000

const field = fc.oneof(fc.boolean(), fc.constantFrom("all", "highlights", "none"), hostileJson)
const bufferBody = fc.oneof(
  fc.record({ pinned: field, muted: field, detached: field, notify: field }, { requiredKeys: [] }),
  fc.dictionary(fc.oneof(fc.constantFrom("pinned", "muted", "detached", "notify"), hostileString), field, { maxKeys: 5 }),
  hostileJson
)
const target = fc.oneof(fc.constantFrom("#belay", "#Belay", "bob", "#a b", "#a,b", "%", "..", ""), hostileString.map((s) => s.slice(0, 300)))
const clientBody = fc.oneof(
  fc.record({ theme: fc.oneof(fc.constantFrom("light", "dark", "system"), hostileJson), linkPreviews: fc.oneof(fc.boolean(), hostileJson) }, { requiredKeys: [] }),
  fc.dictionary(hostileString.map((s) => s.slice(0, 40)), hostileJson, { maxKeys: 20 }),
  hostileJson
)
const ircWord = fc.oneof(
  fc.constantFrom("*", "#belay", "bob", "$a:user", "soju.im/pinned", "soju.im/muted", "0", "1", "2", "GET", "LIST", "SET", "CLEAR", "SUB", "UNSUB", "SUBS", "SYNC", "destr0y", ":", ":x y"),
  fc.string({ unit: "grapheme", maxLength: 30 }).map((s) => s.replace(/[\r\n\0 ]/g, "_"))
)
const metadataLine = fc.array(ircWord, { maxLength: 8 }).map((words) => `METADATA ${words.join(" ")}`.slice(0, 400))

/** A target in a path: percent-encoded, a lone surrogate (which encodeURIComponent refuses) as its raw bytes. */
const encodeTarget = (t: string) => {
  try {
    return encodeURIComponent(t)
  } catch {
    return "%ED%A0%80"
  }
}

const IRC_REPLIES = new Set(["761", "766", "770", "771", "772", "774", "BATCH", "METADATA", "461", "FAIL"])

describe(`preferences under hostile input on ${describeMode}`, () => {
  it.scopedLive("REST bodies and METADATA lines: contract answers only, nothing invalid stored", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, networkId, httpUrl } = app
      console.log(`preferences fuzz: seed ${SEED}, ${RUNS} cases per surface`)
      const token = yield* passwordToken(httpUrl, PASSWORD)
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const put = (path: string, body: Buffer) =>
        Effect.promise(async () => {
          const res = await fetch(`${httpUrl}${path}`, { method: "PUT", headers, body })
          return { status: res.status, text: await res.text() }
        })
      const ids = fc.oneof(fc.constant(String(networkId)), fc.constantFrom("0", "-1", "1e3", "abc", "99999999999999999999"))
      const bufferCases = fc.sample(fc.tuple(ids, target, bufferBody), { seed: SEED, numRuns: RUNS })
      let accepted = 0
      for (const [id, t, body] of bufferCases) {
        const path = `/api/buffers/${id}/${encodeTarget(t)}/preferences`
        const answer = yield* put(path, encodeJson(body))
        const label = `${path} ${encodeJson(body).toString("utf8").slice(0, 200)}`
        expect([label, answer.status < 500]).toEqual([label, true])
        let json: Record<string, unknown> = {}
        try {
          json = JSON.parse(answer.text) as Record<string, unknown>
        } catch {
          expect([label, "an answer that is not JSON"]).toEqual([label, answer.text.slice(0, 100)])
        }
        if (answer.status === 200) {
          accepted++
          expect(json.networkId).toBe(networkId)
          for (const k of ["pinned", "muted", "detached"]) expect(typeof json[k]).toBe("boolean")
          expect(["all", "highlights", "none"]).toContain(json.notify)
        } else {
          expect([label, [400, 404, 413].includes(answer.status)]).toEqual([label, true])
          expect(typeof json.error).toBe("string")
        }
      }

      const clientCases = fc.sample(clientBody, { seed: SEED + 1, numRuns: RUNS })
      for (const body of clientCases) {
        const answer = yield* put("/api/preferences/client", encodeJson(body))
        const label = encodeJson(body).toString("utf8").slice(0, 200)
        expect([label, [200, 400, 413].includes(answer.status)]).toEqual([label, true])
        if (answer.status === 200) {
          const client = (JSON.parse(answer.text) as { client: unknown }).client
          expect(readClientDocument(client)).toEqual(client)
          expect(new TextEncoder().encode(JSON.stringify(client)).length).toBeLessThanOrEqual(CLIENT_DOCUMENT_BYTES)
        }
      }

      // METADATA lines from a client with the capability: only the extension's replies, the client still served.
      const c = yield* welcomedClient(port, "alice/fake@fuzz", PASSWORD, `${CAPS} draft/metadata-2`)
      const lines = fc.sample(metadataLine, { seed: SEED + 2, numRuns: RUNS })
      for (let i = 0; i < lines.length; i += 50) {
        const slice = lines.slice(i, i + 50)
        yield* c.send(...slice, `PING fence${i}`)
        const got = yield* c.until((l) => l.command === "PONG" && l.params.at(-1) === `fence${i}`, "20 seconds")
        for (const l of got) {
          if (l.command === "PONG") continue
          const label = `${slice.join(" | ").slice(0, 300)} → ${l.raw}`
          expect([label, IRC_REPLIES.has(l.command)]).toEqual([label, true])
          if (l.command === "FAIL") expect(l.params[0]).toBe("METADATA")
        }
      }
      yield* c.send("PING still-here")
      yield* c.next("PONG")

      // What was stored is valid and bounded: rows of this network only, no more than were accepted, targets usable.
      const sql = app.get(SqlClient.SqlClient)
      const rows = yield* sql<{ networkId: number; target: string }>`
        SELECT network_id AS "networkId", target FROM buffer_preferences`.pipe(Effect.orDie)
      expect(rows.length).toBeLessThanOrEqual(accepted + lines.length)
      for (const r of rows) {
        expect(r.networkId).toBe(networkId)
        expect(validTarget(r.target)).toBe(true)
      }
    }), 600_000)
})
