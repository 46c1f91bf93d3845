// ReactionChips: the reactions given to one message, drawn under it (Reactions.ts gathers them): each distinct reaction
// once, with how many gave it and, for the screen reader and on hover, who; the member's own marked. Where the member
// may react (message-tags upstream), a reaction not yet theirs is a button that gives it too.
import { reactedBy, type ReactionGroup, reactionLabel } from "../Reactions.js"

export interface ReactionChipsProps {
  readonly groups: ReadonlyArray<ReactionGroup>
  readonly ownNick: string | null
  /** Gives `reaction` as the member's own; null when the member cannot react here. */
  readonly onReact: ((reaction: string) => void) | null
}

export const ReactionChips = ({ groups, ownNick, onReact }: ReactionChipsProps) => (
  <div class="reactions" role="group" aria-label="Reactions">
    {groups.map((g) => {
      const label = reactionLabel(g.reaction)
      const who = reactedBy(g, ownNick)
      const face = <><span class="reaction-face">{label}</span> <span class="count">{g.count}</span></>
      if (onReact === null || g.mine) {
        return (
          <span key={g.reaction} class={g.mine ? "reaction mine" : "reaction"} title={who}>
            {face}<span class="visually-hidden">: {who}</span>
          </span>
        )
      }
      return (
        <button
          key={g.reaction}
          type="button"
          class="reaction"
          aria-label={`${label} ${g.count}: ${who}. React ${label} too`}
          title={`${who}. Click to react ${label} too.`}
          onClick={() => onReact(g.reaction)}
        >
          {face}
        </button>
      )
    })}
  </div>
)
