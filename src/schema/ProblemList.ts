// ProblemList: the one sentence a refusal makes of its problems (a tool's invalid-arguments message, an /api body's
// error_description), bounded in size whatever the input: a value of 200,000 wrong items has 200,000 problems, and a
// message that shows an offending value can be as long as the value. Pure; no state, safe from any fiber.

/** Problems shown; the rest are counted. */
export const PROBLEMS_SHOWN = 8
/** Characters of one problem shown; a longer one is cut with "...". */
export const PROBLEM_CHARACTERS = 200

/** `problems` joined with "; ": the first PROBLEMS_SHOWN, each cut to PROBLEM_CHARACTERS, then how many more there are. */
export const listProblems = (problems: ReadonlyArray<string>): string => {
  const shown = problems.slice(0, PROBLEMS_SHOWN).map((problem) =>
    problem.length > PROBLEM_CHARACTERS ? `${problem.slice(0, PROBLEM_CHARACTERS - 3)}...` : problem
  )
  const more = problems.length - shown.length
  return more > 0 ? `${shown.join("; ")}; and ${more} more` : shown.join("; ")
}
