/**
 * ReconnectPolicy owns every timing decision of the network actors, in one block (soju's `server.go` habit), the
 * named Schedules built from them, and the one place that says which connection failures are permanent.
 *
 * Concurrency rule: constants and Schedules are immutable values. A `Stepper` holds the state of one schedule for
 * one actor and must be stepped by that actor's dispatcher only (it is not shared between fibers).
 *
 * Time comes only from Effect's Clock (docs/architecture.md): a Stepper reads `Clock.currentTimeMillis`, and the actors'
 * timers and the connect throttle run on it, so tests drive backoff, keepalive, nick regain and connect slots with
 * `TestClock.adjust`.
 */
import { Clock, Duration, Effect, Random, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"

// ---------------------------------------------------------------------------------------------------------------
// Every timing constant of the actors.

/** First reconnect delay (before jitter). soju waits a minute; operators expect a dropped link back within seconds. */
export const RECONNECT_BASE: Duration.Duration = Duration.seconds(2)
/** The backoff doubles up to this (soju `retryConnectMaxDelay`: 10 minutes). */
export const RECONNECT_CAP: Duration.Duration = Duration.minutes(10)
/**
 * New connections of the whole process (ConnectThrottle.ts), whoever asks: boot, a retry, connect_network. ZNC spaces
 * every connect by its `ConnectDelay`; soju spreads reconnects. A server restart drops every network of that server
 * at once, and the first delay's 0.8–1.0 jitter alone brought 500 of them back within one second (the target is at
 * most a fifth, 100, in any second). So: CONNECT_BURST connects may go at once after a quiet moment (a small
 * bouncer's whole boot or a restart of its server costs no extra delay, and tests on TestClock need no adjusting),
 * and beyond that one every CONNECT_SPACING, CONNECT_RATE a second. No one-second window then holds more than
 * CONNECT_BURST + CONNECT_RATE − 1 = 59 connects, well under 100 even when a busy event loop runs a few slots late
 * and bunches them (right after a lag in handling retries, CONNECT_CATCH_UP below adds the lag's slots).
 */
export const CONNECT_RATE = 50
export const CONNECT_BURST = 10
/**
 * How far back the slots of a retry handled late may count from (ConnectThrottle.reserveSince): a busy core handling a
 * storm's drops hands the throttle its requests late, and their slots count from when they were due, at most this
 * long ago. Then a one-second window holds at most CONNECT_BURST + CONNECT_CATCH_UP × CONNECT_RATE + CONNECT_RATE
 * connects (310), and only right after such a lag; a storm of N networks lags about N × the handling of one drop, so
 * the windows stay under a fifth of N (500 networks: a lag of a few hundred milliseconds, a few dozen slots).
 */
export const CONNECT_CATCH_UP: Duration.Duration = Duration.seconds(5)
/** The spacing between two connects beyond the burst, whole milliseconds (20 ms at 50 a second). */
export const CONNECT_SPACING: Duration.Duration = Duration.millis(Math.ceil(1000 / CONNECT_RATE))
/**
 * The documented reconnect bound: `networks` networks dropped at once (a server restart) are all connecting again
 * within the longest first delay (RECONNECT_BASE; the jitter only shortens it) plus one CONNECT_SPACING each (the
 * burst only makes it shorter), since the last of them gets a slot at most that far behind the first request.
 * 500 networks: 2 s + 500 × 20 ms = 12 s.
 */
export const reconnectBound = (networks: number): Duration.Duration =>
  Duration.sum(RECONNECT_BASE, Duration.times(CONNECT_SPACING, networks))
/**
 * A connection that stayed registered at least this long resets the backoff, so a network that dropped after days
 * is retried within seconds; one that kills us right after registration (an aKill loop) keeps backing off.
 * irc-framework calls 5 s "safely registered"; we ask for more because K-lines often land a few seconds in.
 */
export const STABLE_CONNECTION: Duration.Duration = Duration.seconds(30)
/** Socket open plus registration must finish within this (soju: connect + register, 1 minute). */
export const REGISTRATION_TIMEOUT: Duration.Duration = Duration.minutes(1)
/** ZNC's NoTrafficTimeout halves: PING after 90 s without a line from the server... */
export const KEEPALIVE_IDLE: Duration.Duration = Duration.seconds(90)
/** ...and drop the connection after 180 s of silence (ZNC `NoTrafficTimeout`). */
export const KEEPALIVE_DEAD: Duration.Duration = Duration.seconds(180)
/** Nick regain without MONITOR: first retry after 15 s, doubling to 10 minutes, plus up to 10 s (soju `upstream.go`). */
export const REGAIN_BASE: Duration.Duration = Duration.seconds(15)
export const REGAIN_CAP: Duration.Duration = Duration.minutes(10)
export const REGAIN_JITTER: Duration.Duration = Duration.seconds(10)
/** After QUIT, how long the server may take to close before we close the socket ourselves. */
export const QUIT_GRACE: Duration.Duration = Duration.seconds(2)
/**
 * Shutdown of every actor (QUIT in parallel, each waited for at most QUIT_GRACE + SHUTDOWN_SLACK) plus the final
 * history flush. The process has 5 s in all from SIGTERM (docs/decisions/several-nodes.md "Shutdown"): the HTTP drain (1.5 s) comes
 * first, this next, closing the database last.
 */
export const SHUTDOWN_BOUND: Duration.Duration = Duration.seconds(3)
/** How much longer than QUIT_GRACE the supervisor waits for an actor to say its socket closed (its timer's lateness). */
export const SHUTDOWN_SLACK: Duration.Duration = Duration.millis(250)
/** Some servers send no end of MOTD (376/422); rejoin anyway this long after RPL_WELCOME. */
export const REJOIN_FALLBACK: Duration.Duration = Duration.seconds(10)
/** Stored channels cannot be read (database outage): try again this often while the session lives. */
export const CHANNELS_RELOAD: Duration.Duration = Duration.seconds(5)
/** A stopping actor may spend this long writing the repository writes its writer had not done yet. */
export const PERSIST_DRAIN: Duration.Duration = Duration.seconds(1)
/**
 * get_mode_list waits this long for the list (or a refusal) before answering Timeout, whose message states this
 * bound (ModeListWaiters.ts). Bounded well below COMMAND_TIMEOUT so the caller hears the actor's own answer;
 * ngircd's PENALTY throttling delays replies by seconds, not tens of seconds.
 */
export const MODE_LIST_TIMEOUT: Duration.Duration = Duration.seconds(15)
/**
 * The automatic `WHO #chan` after NAMES (away state without away-notify) is given up after this, so a server that
 * never ends the reply (263 RPL_TRYAGAIN under load) cannot stall the WHOs of the channels queued behind it.
 */
export const WHO_TIMEOUT: Duration.Duration = Duration.seconds(60)
/**
 * Outbound flood control (TokenBucket.ts, Outbound.ts): every connection's lines pass a token bucket, FLOOD_BURST lines
 * at once after a quiet moment, then one every FLOOD_INTERVAL. RFC 1459 §8.10 is the rule servers still follow: each
 * message pushes the client's timer 2 s ahead, and messages are parsed only while the timer is less than 10 s ahead,
 * i.e. 5 at once, then one every 2 s. Today's servers allow as much or more, and this stays inside each: InspIRCd's
 * default connect class (threshold 10, commandrate 1000: ten lines of penalty draining at one a second, then "Excess
 * Flood"); Solanum (about one line a second parsed after a small burst, "Excess Flood" once 20 wait unread); ngircd
 * (one second of penalty per command, processing delayed, the connection closed when its read buffer fills). Half of
 * InspIRCd's threshold leaves room for what irc-framework writes outside the bucket (PONG, CAP) and for commands that
 * weigh double; one line every 2 s is half the rate every one of them drains, so our backlog on the server never
 * grows. irssi sends 5 at once then one every 2.2 s; ZNC 9 then 2 s; soju 10 then 2 s.
 */
export const FLOOD_BURST = 5
export const FLOOD_INTERVAL: Duration.Duration = Duration.seconds(2)
/**
 * Lines that may wait in a connection's queue (soju's outgoing queue holds 64): at one every FLOOD_INTERVAL the last
 * goes out about two minutes later. A command whose lines do not fit fails with SendQueueFull and sends nothing; one
 * that needs more than this on its own is refused as invalid-arguments. The actor's own lines (rejoin, WHO, away)
 * are queued whatever the length, since dropping them would leave the connection wrong.
 */
export const SEND_QUEUE_LINES = 64
/** A command not answered by its actor within this fails with Timeout stating this bound (the actor is wedged). */
export const COMMAND_TIMEOUT: Duration.Duration = Duration.seconds(30)
/** A dead actor is restarted after 1 s, doubling to 1 minute while it keeps dying (Sharder.ts: log, go on). */
export const ACTOR_RESTART_BASE: Duration.Duration = Duration.seconds(1)
export const ACTOR_RESTART_CAP: Duration.Duration = Duration.minutes(1)
/** NICKLEN is unknown before ISUPPORT; soju appends `_` only while the nick stays under 30 characters. */
export const ASSUMED_NICKLEN = 30

// ---------------------------------------------------------------------------------------------------------------
// The named Schedules.

/**
 * The reconnect policy: 2 s, 4 s, 8 s … doubling, never above 10 minutes, each delay scaled by a random factor in
 * [0.8, 1.0] so that networks dropped together do not ask again in lockstep (and the cap stays a true maximum); the
 * connect throttle (CONNECT_RATE above) is what bounds how many come back in any one second. The schedule never
 * ends: only a permanent refusal stops the actor retrying.
 */
export const reconnectSchedule: Schedule.Schedule<unknown> = Schedule.exponential(RECONNECT_BASE, 2).pipe(
  Schedule.either(Schedule.spaced(RECONNECT_CAP)),
  Schedule.jitteredWith({ min: 0.8, max: 1.0 })
)

/** Nick regain without MONITOR (soju): 15 s doubling to 10 minutes, plus a uniform 0–10 s. */
export const regainNickSchedule: Schedule.Schedule<unknown> = Schedule.exponential(REGAIN_BASE, 2).pipe(
  Schedule.either(Schedule.spaced(REGAIN_CAP)),
  Schedule.addDelayEffect(() =>
    Effect.map(Random.nextIntBetween(0, Duration.toMillis(REGAIN_JITTER) + 1), (ms) => Duration.millis(ms))
  )
)

/** The supervisor's restart policy for an actor that died: 1 s doubling to a minute. */
export const actorRestartSchedule: Schedule.Schedule<unknown> = Schedule.exponential(ACTOR_RESTART_BASE, 2).pipe(
  Schedule.either(Schedule.spaced(ACTOR_RESTART_CAP))
)

/**
 * One schedule stepped by hand. The actor is event-driven (one inbox), not a retry loop, so it asks "how long until
 * the next attempt?" when a connection ends, publishes that as `nextRetryAt`, and arms a timer (ActorTimers.ts).
 */
export interface Stepper {
  /** The delay before the next attempt; advances the schedule. */
  readonly next: Effect.Effect<Duration.Duration>
  /** Back to the first delay. */
  readonly reset: Effect.Effect<void>
}

/**
 * A class rather than a record of closures: every actor holds two steppers, and prototype getters cost nothing per
 * instance (an idle network is budgeted 64 KiB of heap), where two Effects, a Ref and their closures cost about a kilobyte.
 */
class ScheduleStepper implements Stepper {
  private state: unknown
  constructor(private readonly schedule: Schedule.Schedule<unknown>) {
    this.state = schedule.initial
  }
  get next(): Effect.Effect<Duration.Duration> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.map(Effect.suspend(() => this.schedule.step(now, undefined, this.state)), ([next, , decision]) => {
        this.state = next
        // Our schedules never end; a Done decision would mean "stop", which only permanent failures decide.
        if (ScheduleDecision.isDone(decision)) return RECONNECT_CAP
        // Whole milliseconds: jitter yields fractions, and a published `nextRetryAt` (a Date) has none.
        return Duration.millis(Math.max(0, Math.round(ScheduleIntervals.start(decision.intervals) - now)))
      }))
  }
  get reset(): Effect.Effect<void> {
    return Effect.sync(() => {
      this.state = this.schedule.initial
    })
  }
}

export const makeStepper = (schedule: Schedule.Schedule<unknown>): Effect.Effect<Stepper> =>
  Effect.sync(() => new ScheduleStepper(schedule))

// ---------------------------------------------------------------------------------------------------------------
// Permanent versus temporary.

/**
 * Why a connection attempt can never succeed without the operator changing something, or undefined when retrying
 * may help. soju stops on 464 and 432 (`registrationError.Temporary`); Belay adds 465 (a K-line is not lifted by
 * hammering the server, as ZNC users asked of ZNC too) and a failed SASL login.
 *
 * `registered` is whether RPL_WELCOME arrived on this connection: 432 only stops us while registering (the
 * configured nick is unusable); afterwards it answers a nick change and is just shown.
 */
export const permanentRefusal = (command: string, params: ReadonlyArray<string>, registered: boolean): string | undefined => {
  const text = params.length > 1 ? params[params.length - 1] ?? "" : ""
  switch (command) {
    case "464":
      return `the server refused the password (464 ${text})`.trim()
    case "465":
      return `banned from the server (465 ${text})`.trim()
    case "432":
      return registered ? undefined : `the server refused the nick ${params[1] ?? ""} (432 ${text})`
    // IRCv3 sasl-3.1: 904 authentication failed, 902 the account's nick is locked, 905 message too long.
    case "902":
    case "904":
    case "905":
      return `SASL authentication failed (${command} ${text})`
    default:
      return undefined
  }
}
