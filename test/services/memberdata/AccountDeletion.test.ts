/**
 * AccountDeletion against a real database: the mark makes the account unusable at once (every credential revoked and
 * announced, sign-in refused, networks announced removed), the job deletes every row the account owns and the account
 * last, the name can be taken again, another member is untouched; a deletion a crashed process left half-done is
 * resumed once its lease has run out, never while it is held; and a job that saw no marker looks again when a mark is
 * announced, not every JOB_INTERVAL.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Duration, Effect, Option, PubSub, Queue } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { BrowserSessions } from "../../../src/services/identity/BrowserSessions.js"
import { CredentialRevocations } from "../../../src/services/identity/CredentialRevocations.js"
import { OAuthTokens } from "../../../src/services/identity/OAuthTokens.js"
import { Passkeys } from "../../../src/services/identity/Passkeys.js"
import { sha256 } from "../../../src/services/identity/Tokens.js"
import { accountPayload, CHANNEL } from "../../../src/services/identity/RevocationChannel.js"
import { AccountDeletion, DELETION_JOB_INTERVAL } from "../../../src/services/memberdata/AccountDeletion.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { EventChannel } from "../../../src/services/storage/EventChannel.js"
import { describeMode } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"
import { type Member, rowsOf, secretsOf, seedMember } from "./Fixtures.js"

const NOTHING = {
  accounts: 0,
  deletions: 0,
  networks: 0,
  channels: 0,
  buffers: 0,
  messages: 0,
  nickNotes: 0,
  relayBots: 0,
  readMarkers: 0,
  clientDeliveries: 0,
  apiTokens: 0,
  oauthTokens: 0,
  sessions: 0,
  passkeys: 0,
  pushSubscriptions: 0
}

/** Waits (real time, at most 30 s) until the account row of `member` is gone. */
const untilDeleted = (member: Member) =>
  Effect.gen(function*() {
    for (let i = 0; i < 300; i++) {
      if ((yield* rowsOf(member)).accounts === 0) return
      yield* Effect.sleep(Duration.millis(100))
    }
    throw new Error("the account was not deleted within 30 s")
  })

describe(`AccountDeletion on ${describeMode}`, () => {
  // Real time: the job runs in the background, and a lease is on the database's clock.
  layer(TestServicesLive(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("the mark revokes everything at once; the job deletes every row, the account last; the name is free", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const deletion = yield* AccountDeletion
        const leaver = yield* seedMember("leaver", 12_000)
        const bystander = yield* seedMember("bystander", 10)
        const before = yield* rowsOf(bystander)

        const revoked = yield* (yield* CredentialRevocations).subscribe
        const changed = yield* (yield* CredentialRevocations).accountChanges
        const networkChanges = yield* PubSub.subscribe((yield* Networks).changes)

        const SECRETS = secretsOf("leaver")
        const started = yield* deletion.begin("leaver")
        expect(started).toEqual({ accountId: leaver.accountId, networks: 1 })

        // At once, before the job has deleted anything: no credential answers, and every one was announced.
        expect(yield* (yield* ApiTokens).authenticate(sha256(SECRETS.apiToken))).toEqual(Option.none())
        expect(yield* (yield* OAuthTokens).authenticate(sha256(SECRETS.oauthToken))).toEqual(Option.none())
        expect(yield* (yield* BrowserSessions).lookup(SECRETS.session)).toEqual(Option.none())
        expect(yield* (yield* Passkeys).findByCredentialId(leaver.credentialId)).toEqual(Option.none())
        expect(yield* accounts.verifyPassword("leaver", SECRETS.password)).toEqual(Option.none())
        expect(yield* accounts.findById(leaver.accountId)).toEqual(Option.none())
        expect((yield* accounts.list()).map((a) => a.name)).not.toContain("leaver")
        const events = Chunk.toReadonlyArray(yield* Queue.takeAll(revoked))
        expect(events.filter((e) => e.accountId === leaver.accountId).map((e) => e.credential).sort()).toEqual([
          "api-token",
          "oauth",
          "session"
        ])
        expect(Chunk.toReadonlyArray(yield* Queue.takeAll(changed))).toContain(leaver.accountId)
        expect(Chunk.toReadonlyArray(yield* Queue.takeAll(networkChanges))).toContainEqual(
          expect.objectContaining({ _tag: "Removed", networkId: leaver.networkId, accountId: leaver.accountId })
        )
        // Twice is refused: it is no account any more.
        expect((yield* Effect.flip(deletion.begin("leaver")))._tag).toBe("AccountNotFound")

        yield* untilDeleted(leaver)
        expect(yield* rowsOf(leaver)).toEqual(NOTHING)
        expect(yield* rowsOf(bystander)).toEqual(before)

        // The name is free again, for a new account with nothing of the old one's.
        const again = yield* accounts.create("leaver", "another long password").pipe(Effect.orDie)
        expect(again.id).not.toBe(leaver.accountId)
        expect(yield* (yield* Networks).listing(again.id)).toEqual([])
      }))

    it.scoped("a deletion left half-done by a crashed process is resumed once its lease ran out, never before", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const accounts = yield* Accounts
        const deletion = yield* AccountDeletion
        const member = yield* seedMember("crashed", 12_000)
        // What a process leaves when it is killed mid-way: the mark, its lease (held for an hour, as a live process
        // would hold it), and one batch of the history deleted.
        yield* sql`
          INSERT INTO account_deletions (account_id, claimed_by, claimed_until)
          VALUES (${member.accountId}, gen_random_uuid(), now() + interval '1 hour')`
        yield* sql`
          DELETE FROM messages WHERE id IN (
            SELECT id FROM messages WHERE buffer_id = ${member.bufferIds[0]!} ORDER BY id LIMIT 5000)`

        // Held by the other process: left alone, and the account is unusable all the same.
        yield* deletion.resume
        const held = yield* rowsOf(member)
        expect(held.accounts).toBe(1)
        expect(held.messages).toBe(12_000 - 5000 + 3)
        expect(yield* accounts.findByName("crashed")).toEqual(Option.none())
        expect((yield* Effect.flip(accounts.create("crashed", "another long password")))._tag).toBe("AccountExists")

        // The lease runs out (the process is gone): the next look finishes the deletion.
        yield* sql`UPDATE account_deletions SET claimed_until = now() - interval '1 second' WHERE account_id = ${member.accountId}`
        yield* deletion.resume
        expect(yield* rowsOf(member)).toEqual(NOTHING)
        yield* accounts.create("crashed", "another long password").pipe(Effect.orDie)
      }))

    it.scoped("having seen no marker, the job looks again when a mark is announced, not every few seconds", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const channel = yield* EventChannel
        const member = yield* seedMember("elsewhere", 10)
        // The earlier tests' markers are gone: within a JOB_INTERVAL the job has looked and seen none.
        yield* Effect.sleep(Duration.sum(DELETION_JOB_INTERVAL, Duration.seconds(1)))

        // A marker nobody announced: no look comes for it, however many JOB_INTERVALs pass.
        yield* sql`INSERT INTO account_deletions (account_id) VALUES (${member.accountId})`
        yield* Effect.sleep(Duration.sum(DELETION_JOB_INTERVAL, Duration.seconds(2)))
        expect((yield* rowsOf(member)).accounts).toBe(1)

        // Another process's notice of the mark (another origin on the channel) wakes the job, which finishes it.
        yield* channel.notify(CHANNEL, [accountPayload("another-process", member.accountId)])
        yield* untilDeleted(member)
        expect(yield* rowsOf(member)).toEqual(NOTHING)
      }))
  })
})
