----------------------------- MODULE LostWrite ------------------------------
(***************************************************************************)
(* The write path of ferry::entity (engine/src/entity/trip.rs) for one     *)
(* key, with lost replies: a write whose reply was lost is told landed or  *)
(* absent by reading the key's row back.                                   *)
(*                                                                         *)
(* What is there:                                                          *)
(*   - The key's row in the store: a version (the inputs applied), the     *)
(*     owner epoch of its last write, and its state: the inputs applied,   *)
(*     in order (the shard's inputs 1..N, and those of the other writers,  *)
(*     ids above N). A key never written reads as version 0, epoch 0.      *)
(*   - One shard, the key's only writer within its epoch Mine. Ferry hands *)
(*     it the key's inputs in batches of 1..BatchMax, in submission order, *)
(*     one batch in flight at a time (G1). The shard remembers the version *)
(*     and state it last wrote or read, or does not know the key (it may   *)
(*     forget it between batches, to make room for other keys).            *)
(*   - Other writers, each write applying one input of its own and moving  *)
(*     the version on by one, in one step: an outside writer (a touch:     *)
(*     Touches times at most, outside every condition, writing epoch 0, an *)
(*     epoch no owner has), an owner of epoch Mine - 1 that has not        *)
(*     noticed it is stale (on the store's condition, so only until a      *)
(*     newer epoch writes), and the key's next owner, of epoch Mine + 1    *)
(*     (its write fences the shard).                                       *)
(*                                                                         *)
(* The store's write is conditional: a write folded from version v under   *)
(* epoch e lands iff the row is at version v and its epoch is at most e (a *)
(* row never written is at version 0), and then sets version v + (its      *)
(* inputs), epoch e and the state, in the same step. Shape "State" writes  *)
(* the state folded from what the shard knew (start_entities); shape "Log" *)
(* appends the inputs (start_log).                                         *)
(*                                                                         *)
(* How the shard carries a batch (its key's part of a trip, round by       *)
(* round):                                                                 *)
(*   - Read the row if it does not know the key: a row of a newer epoch    *)
(*     answers the batch Fenced; any other is remembered.                  *)
(*   - Fold the batch from what it knows and send the write. Landed:       *)
(*     remember what it wrote, answer Applied. Not landed (somebody else   *)
(*     wrote): forget the key and read it again, or answer NotApplied      *)
(*     after Attempts such writes. The request fails, not run (refused, or *)
(*     the connection broke before it was sent): answer NotApplied.        *)
(*   - Reply lost (Losses times at most; the request ran, landed or not,   *)
(*     or never ran): forget the key and read it back. Landed if the row   *)
(*     is at the write's version and the shard's epoch and, for a state,   *)
(*     holds the state the write wrote (a log has no state to compare):    *)
(*     answer Applied. At the version it was folded from it is absent:     *)
(*     fold and send again, and keep the earlier copy as suspect. At any   *)
(*     other version somebody else moved the key: answer Unknown.          *)
(*   - A suspect (a lost write found absent and sent again): if the write  *)
(*     sent again does not land, or its request fails, the earlier copy is *)
(*     looked for again as a lost write (it may have landed since) instead *)
(*     of folding again or answering NotApplied. A write that lands clears *)
(*     it.                                                                 *)
(*   - A read that fails answers the batch NotApplied, or, while a write   *)
(*     (or a suspect) is looked for, looks again or answers Unknown (once  *)
(*     resolve_within has passed).                                         *)
(* Each input ends with exactly one answer: Applied, NotApplied, Unknown   *)
(* or Fenced.                                                              *)
(*                                                                         *)
(* Flaw = "NoVersion": the write's condition is the epoch alone, and a     *)
(* write whose reply was lost is simply sent again. Flaw = "Resend": the   *)
(* condition holds the version, but a write whose reply was lost is read,  *)
(* folded and sent afresh as if it were absent, without looking for it     *)
(* first.                                                                  *)
(*                                                                         *)
(* Two conditions of the world, each switched by a constant:               *)
(*   - TouchKeepsEpoch: the touch leaves the row's epoch as it was, so the *)
(*     row can reach a lost write's version at the shard's epoch without   *)
(*     it. The state comparison tells them apart for a state; for a log    *)
(*     the design assumes that nobody else writes at an owner's epoch, and *)
(*     with this switch it fails.                                          *)
(*   - LateLanding: a lost request that has not run by the time the shard  *)
(*     reads the row back may still run at any later moment (a session     *)
(*     that goes on with its statement after the connection failed). The   *)
(*     suspect is what keeps the design right then.                        *)
(*                                                                         *)
(* Bounded here, not in trip.rs: requests that fail, not run (Refused,     *)
(* Broken), Refusals times at most. Where such a failure answers the batch *)
(* no bound is needed; where it meets a suspect it sends the shard to look *)
(* for the earlier copy, find it absent and send it again, and trip.rs     *)
(* bounds that loop by nothing (resolve_within is looked at only when a    *)
(* read fails): a store that keeps refusing the write while reads succeed  *)
(* keeps the batch unanswered. (Lost replies, bounded by Losses, go round  *)
(* the same way.)                                                          *)
(*                                                                         *)
(* A gap of trip.rs as built, shown by LostWriteLateLog.cfg: for a log, a  *)
(* late request of an earlier batch of the key, answered Unknown while it  *)
(* was still to run, can land at the version and epoch a later batch's     *)
(* lost write would set, and is taken for it.                              *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    N,                \* the key's inputs 1..N, submitted in this order
    BatchMax,         \* max_batch_size
    Mine,             \* the shard's owner epoch
    Attempts,         \* write_attempts
    Losses,           \* writes whose reply may be lost, at most
    Refusals,         \* writes that fail, not run, at most
    Touches,          \* writes of the outside writer, at most
    StaleWrites,      \* writes of the stale owner (epoch Mine - 1), at most
    NewerWrites,      \* writes of a newer owner (epoch Mine + 1), at most
    Shape,            \* "State" (start_entities) or "Log" (start_log)
    TouchKeepsEpoch,  \* FALSE: a touch writes epoch 0, no owner's;
                      \* TRUE: it leaves the row's epoch as it was
    LateLanding,      \* TRUE: a lost request may land later, at any moment
    Flaw              \* "None" (the design as built), "NoVersion" or "Resend"

ASSUME
    /\ N \in Nat \ {0}
    /\ BatchMax \in Nat \ {0}
    /\ Mine \in Nat /\ Mine >= 2
    /\ Attempts \in Nat \ {0}
    /\ Losses \in Nat
    /\ Refusals \in Nat
    /\ Touches \in Nat /\ StaleWrites \in Nat /\ NewerWrites \in Nat
    /\ Shape \in {"State", "Log"}
    /\ TouchKeepsEpoch \in BOOLEAN
    /\ LateLanding \in BOOLEAN
    /\ Flaw \in {"None", "NoVersion", "Resend"}

Inputs == 1 .. N
\* Every write of somebody else applies one input of its own: ids above N.
Others == N + 1 .. N + Touches + StaleWrites + NewerWrites

Answers == {"none", "Applied", "NotApplied", "Unknown", "Fenced"}
Phases  == {"idle", "read", "send"}

\* A write as sent (trip.rs's Sent): the version it was folded from, its
\* inputs, and the state it carries (the Log shape carries the inputs
\* alone: <<>> here).
NoWrite == [exp |-> -1, ids |-> <<>>, after |-> <<>>]

VARIABLES
    \* the key's row in the store (a key never written reads as version 0,
    \* epoch 0; every write moves the version on, so version 0 is "absent")
    rowVersion,   \* inputs applied to the key
    rowEpoch,     \* the owner epoch of the row's last write
    rowState,     \* the inputs applied, in order: ours (1..N) and others'
    \* the shard
    next,         \* the next input to take into a batch
    batch,        \* the key's batch in flight (<<>>: none); one at a time (G1)
    phase,        \* "read" the row, "send" the write, or "idle" (no batch)
    memKnown,     \* the shard remembers the key
    memVersion,   \* ... at this version
    memState,     \* ... with this state (State shape; <<>> for a log)
    lost,         \* the write whose reply was lost, to look for (NoWrite: none)
    suspect,      \* a lost write found absent and sent again (NoWrite: none)
    conflicts,    \* writes of this batch that did not land
    losses,       \* replies lost so far
    refusals,     \* writes that failed, not run, so far
    \* the other writers
    touches,      \* writes of the outside writer so far
    staleWrites,  \* writes of the stale owner so far
    newerWrites,  \* writes of the newer owner so far
    late,         \* LateLanding: the lost requests the store has not run yet
    \* the callers
    answer,       \* answer[i]: input i's answer ("none": not yet)
    answers       \* answers[i]: how many answers input i was given

row     == <<rowVersion, rowEpoch, rowState>>
mem     == <<memKnown, memVersion, memState>>
shard   == <<next, batch, phase, mem, lost, suspect, conflicts, losses,
            refusals>>
writers == <<touches, staleWrites, newerWrites, late>>
vars    == <<row, shard, writers, answer, answers>>

-----------------------------------------------------------------------------
(* Helpers *)

Min(a, b) == IF a <= b THEN a ELSE b
Range(s) == {s[j] : j \in DOMAIN s}
Count(s, x) == Cardinality({j \in DOMAIN s : s[j] = x})
Ours(s) == SelectSeq(s, LAMBDA x : x <= N)

\* What the shard keeps of a row's state: the state itself, or nothing for
\* a log (Base = ()).
Base(s) == IF Shape = "State" THEN s ELSE <<>>

\* The id the next write of somebody else applies.
NextOther == N + touches + staleWrites + newerWrites + 1

-----------------------------------------------------------------------------
(* The store *)

\* A write of the shard lands iff the row is still at the version it was
\* folded from and no newer epoch wrote it (as built), or on the epoch
\* alone (NoVersion).
Lands(w) ==
    /\ Flaw = "NoVersion" \/ rowVersion = w.exp
    /\ rowEpoch <= Mine

\* ... and then, in the same step, sets version, epoch and state: the
\* state folded from what the shard knew (State), or the row's log with
\* the inputs appended (Log).
Land(w) ==
    /\ rowVersion' = w.exp + Len(w.ids)
    /\ rowEpoch' = Mine
    /\ rowState' = IF Shape = "State" THEN w.after ELSE rowState \o w.ids

Applied(w) == IF Lands(w) THEN Land(w) ELSE UNCHANGED row

\* What the row read back says of a lost write: it landed iff the row is at
\* its version and the shard's epoch and, for a state, holds the state it
\* wrote (trip.rs's known_from, with Sent::state); a log has no state to
\* compare.
Found(w) ==
    /\ rowVersion = w.exp + Len(w.ids)
    /\ rowEpoch = Mine
    /\ Shape = "Log" \/ rowState = w.after

-----------------------------------------------------------------------------
(* The shard *)

Init ==
    /\ rowVersion = 0
    /\ rowEpoch = 0
    /\ rowState = <<>>
    /\ next = 1
    /\ batch = <<>>
    /\ phase = "idle"
    /\ memKnown = FALSE
    /\ memVersion = 0
    /\ memState = <<>>
    /\ lost = NoWrite
    /\ suspect = NoWrite
    /\ conflicts = 0
    /\ losses = 0
    /\ refusals = 0
    /\ touches = 0
    /\ staleWrites = 0
    /\ newerWrites = 0
    /\ late = {}
    /\ answer = [i \in Inputs |-> "none"]
    /\ answers = [i \in Inputs |-> 0]

\* The batch's inputs are answered a, and the key is free for its next one
\* (its run, with what it was looking for, is gone).
Answer(a) ==
    /\ answer' = [i \in Inputs |-> IF i \in Range(batch) THEN a ELSE answer[i]]
    /\ answers' = [i \in Inputs |->
                     IF i \in Range(batch) THEN answers[i] + 1 ELSE answers[i]]
    /\ batch' = <<>>
    /\ phase' = "idle"
    /\ lost' = NoWrite
    /\ suspect' = NoWrite

Remember(version, state) ==
    /\ memKnown' = TRUE
    /\ memVersion' = version
    /\ memState' = state

Forget ==
    /\ memKnown' = FALSE
    /\ memVersion' = 0
    /\ memState' = <<>>

\* Ferry takes the key's next batch, 1..BatchMax inputs from the front of
\* its lane, once the last one is answered. A key the shard remembers is
\* written at once; one it does not know is read first.
Take ==
    /\ phase = "idle"
    /\ next <= N
    /\ \E n \in 1 .. Min(BatchMax, N - next + 1) :
         /\ batch' = [j \in 1 .. n |-> next + j - 1]
         /\ next' = next + n
    /\ phase' = IF memKnown THEN "send" ELSE "read"
    /\ conflicts' = 0
    /\ UNCHANGED <<row, mem, lost, suspect, losses, refusals, writers, answer,
                   answers>>

\* Phases 1 and 2: read the row and judge it (trip.rs's known_from). A
\* lost write is found landed (Found), moved by somebody else (at any other
\* version than the one it was folded from: Unknown), or absent (at the
\* version it was folded from: kept as suspect, and judged as any key
\* read). A newer epoch's row is Fenced; any other row is remembered, to
\* fold from.
Read ==
    /\ phase = "read"
    /\ IF lost # NoWrite /\ Found(lost)
         THEN /\ Answer("Applied")
              /\ Remember(rowVersion, lost.after)
       ELSE IF lost # NoWrite /\ rowVersion # lost.exp
         THEN /\ Answer("Unknown")
              /\ UNCHANGED mem
       ELSE IF rowEpoch > Mine
         THEN /\ Answer("Fenced")
              /\ Forget
       ELSE /\ Remember(rowVersion, Base(rowState))
            /\ phase' = "send"
            /\ lost' = NoWrite
            /\ suspect' = IF lost # NoWrite THEN lost ELSE suspect
            /\ UNCHANGED <<batch, answer, answers>>
    /\ UNCHANGED <<row, next, conflicts, losses, refusals, writers>>

\* The read fails (the store is away, or the connection cannot be made;
\* trip.rs's fail): a batch with no write to look for was not applied. One
\* with a lost write, or a suspect (which then becomes the lost write), is
\* looked for again next round, until resolve_within has passed, then
\* answered Unknown. (Looking again for a write already lost changes
\* nothing: a stutter, left out.)
ReadFails ==
    /\ phase = "read"
    /\ IF lost = NoWrite /\ suspect = NoWrite
         THEN Answer("NotApplied")
         ELSE \/ Answer("Unknown")
              \/ /\ lost = NoWrite
                 /\ lost' = suspect
                 /\ suspect' = NoWrite
                 /\ UNCHANGED <<batch, phase, answer, answers>>
    /\ UNCHANGED <<row, next, mem, conflicts, losses, refusals, writers>>

\* What the shard does once a write's reply is lost:
\*   as built: forget the key and look for the write (read it back); a
\*   suspect is kept (it is the same write, sent before);
\*   NoVersion: send the same write again, without looking;
\*   Resend: forget the key and read, fold and write it afresh, as if the
\*   write were absent, without looking for it.
OnLost(w) ==
    CASE Flaw = "None" ->
             /\ Forget
             /\ lost' = w
             /\ phase' = "read"
      [] Flaw = "NoVersion" ->
             /\ UNCHANGED <<mem, lost, phase>>
      [] Flaw = "Resend" ->
             /\ Forget
             /\ phase' = "read"
             /\ UNCHANGED lost

\* A write that did not land, or whose request failed, of a batch with a
\* suspect: the earlier copy may have landed since; forget the key and look
\* for it as a lost write.
LookForSuspect ==
    /\ Forget
    /\ lost' = suspect
    /\ suspect' = NoWrite
    /\ phase' = "read"
    /\ UNCHANGED <<batch, answer, answers>>

\* Phases 3 and 4: the conditional write of the batch, folded from what
\* the shard remembers, and its outcome (trip.rs's send and settle). The
\* store judges it in one step.
\*   - Reply delivered, landed: remembered (the version and state it
\*     wrote) and answered Applied; a suspect is cleared.
\*   - Reply delivered, not landed (somebody else wrote): with a suspect,
\*     look for it; else forgotten, and read again, or answered NotApplied
\*     after Attempts such writes.
\*   - The request fails, not run (Refused, or Broken: the connection
\*     failed before it was sent, also at the start of the round;
\*     Refusals times at most): with a suspect, look for it; else
\*     answered NotApplied.
\*   - Reply lost (Losses times at most): the request was run (landed or
\*     not) or never was; with LateLanding it may instead stay in the
\*     store, to run at any later moment.
Send ==
    /\ phase = "send"
    /\ LET w == [exp |-> memVersion, ids |-> batch,
                 after |-> IF Shape = "State" THEN memState \o batch ELSE <<>>]
       IN  \/ /\ Lands(w)
              /\ Land(w)
              /\ Answer("Applied")
              /\ Remember(w.exp + Len(w.ids), w.after)
              /\ UNCHANGED <<conflicts, losses, refusals, late>>
           \/ /\ ~Lands(w)
              /\ IF suspect # NoWrite
                   THEN /\ LookForSuspect
                        /\ UNCHANGED conflicts
                   ELSE /\ conflicts' = conflicts + 1
                        /\ Forget
                        /\ IF conflicts + 1 >= Attempts
                             THEN Answer("NotApplied")
                             ELSE /\ phase' = "read"
                                  /\ UNCHANGED <<batch, lost, suspect, answer,
                                                 answers>>
              /\ UNCHANGED <<row, losses, refusals, late>>
           \/ /\ refusals < Refusals
              /\ refusals' = refusals + 1
              /\ IF suspect # NoWrite
                   THEN LookForSuspect
                   ELSE /\ Answer("NotApplied")
                        /\ Forget
              /\ UNCHANGED <<row, conflicts, losses, late>>
           \/ /\ losses < Losses
              /\ losses' = losses + 1
              /\ \/ /\ Applied(w)           \* run; the reply lost
                    /\ UNCHANGED late
                 \/ /\ ~LateLanding         \* lost on its way: never run
                    /\ UNCHANGED <<row, late>>
                 \/ /\ LateLanding          \* still to run, at any moment
                    /\ late' = late \cup {w}
                    /\ UNCHANGED row
              /\ OnLost(w)
              /\ UNCHANGED <<batch, suspect, conflicts, refusals, answer,
                             answers>>
    /\ UNCHANGED <<next, touches, staleWrites, newerWrites>>

\* The shard's memory makes room for other keys (it holds `remember` keys
\* at most; none with remember(0)): the key is forgotten, and its next
\* batch reads it. (A key forgotten between a round's read phase and its
\* judge is read next round: the same as forgotten before the batch.)
Evict ==
    /\ memKnown
    /\ phase = "idle"
    /\ Forget
    /\ UNCHANGED <<row, next, batch, phase, lost, suspect, conflicts, losses,
                   refusals, writers, answer, answers>>

\* The shard: one step of the key's batch at a time (its trip's rounds).
Shard == Take \/ Read \/ ReadFails \/ Send

-----------------------------------------------------------------------------
(* The other writers: each write applies one input of its own (an id       *)
(* above N) and moves the version on by one, in one step of the store.     *)

\* The outside writer, outside every condition (a touch, a migration, an
\* operator's fix). It writes epoch 0, an epoch no owner has; with
\* TouchKeepsEpoch it leaves the row's epoch as it was, as
\* MemoryStore::write_outside(key, |row| row.version += 1) does.
Touch ==
    /\ touches < Touches
    /\ touches' = touches + 1
    /\ rowVersion' = rowVersion + 1
    /\ rowEpoch' = IF TouchKeepsEpoch THEN rowEpoch ELSE 0
    /\ rowState' = rowState \o <<NextOther>>
    /\ UNCHANGED <<shard, staleWrites, newerWrites, late, answer, answers>>

\* An owner of an older epoch, still writing: read-modify-write on the
\* same condition, in one step; it lands only while no newer epoch wrote.
Stale ==
    /\ staleWrites < StaleWrites
    /\ rowEpoch <= Mine - 1
    /\ staleWrites' = staleWrites + 1
    /\ rowVersion' = rowVersion + 1
    /\ rowEpoch' = Mine - 1
    /\ rowState' = rowState \o <<NextOther>>
    /\ UNCHANGED <<shard, touches, newerWrites, late, answer, answers>>

\* The key's next owner: its write always lands, and fences the shard.
Newer ==
    /\ newerWrites < NewerWrites
    /\ newerWrites' = newerWrites + 1
    /\ rowVersion' = rowVersion + 1
    /\ rowEpoch' = Mine + 1
    /\ rowState' = rowState \o <<NextOther>>
    /\ UNCHANGED <<shard, touches, staleWrites, late, answer, answers>>

\* LateLanding: the store runs a lost request only now (its session still
\* ran it after the connection failed), on its own condition. (Copies of
\* one write sent again are the same request here: once one has run, the
\* row has left the version they were folded from, and none lands.)
LateRun ==
    /\ \E w \in late :
         /\ Applied(w)
         /\ late' = late \ {w}
    /\ UNCHANGED <<shard, touches, staleWrites, newerWrites, answer, answers>>

-----------------------------------------------------------------------------

\* At rest: every input was taken and its batch answered. The other
\* writers may still write.
Rest == phase = "idle" /\ next > N

Done ==
    /\ Rest
    /\ UNCHANGED vars

Next ==
    \/ Shard
    \/ Evict
    \/ Touch
    \/ Stale
    \/ Newer
    \/ LateRun
    \/ Done

\* The shard keeps working (its trips go round, the store answers or the
\* connection fails); the other writers and lost replies are left free.
Spec == Init /\ [][Next]_vars /\ WF_vars(Shard)

-----------------------------------------------------------------------------
(* Properties *)

\* No input of the shard is applied twice.
NoDoubleApply ==
    \A i \in Inputs : Count(rowState, i) <= 1

\* An input answered Applied is in the row, exactly once.
AnsweredAppliedIsApplied ==
    \A i \in Inputs : answer[i] = "Applied" => Count(rowState, i) = 1

\* An input answered NotApplied or Fenced is not in the row, now or later
\* (checked in every state, so also after the answer).
AnsweredNotAppliedIsNot ==
    \A i \in Inputs : answer[i] \in {"NotApplied", "Fenced"} => Count(rowState, i) = 0

\* The shard's inputs in the row are in submission order.
InOrder ==
    LET s == Ours(rowState) IN
        \A j \in 1 .. Len(s) - 1 : s[j] < s[j + 1]

\* No write of somebody else is undone by a write of the shard (no lost
\* update): every other writer's input is still in the row.
OthersKept ==
    \A f \in N + 1 .. NextOther - 1 : Count(rowState, f) = 1

\* Each input is answered at most once, and at rest exactly once.
AnsweredOnce ==
    \A i \in Inputs : answers[i] <= 1

EveryInputAnsweredAtRest ==
    Rest => \A i \in Inputs : answer[i] # "none" /\ answers[i] = 1

\* Liveness: every input is eventually answered.
EveryInputAnswered ==
    <>[](\A i \in Inputs : answer[i] # "none")

-----------------------------------------------------------------------------
(* Bookkeeping of the design as built, checked by the configurations that  *)
(* must pass.                                                              *)

TypeOK ==
    /\ rowVersion \in Nat
    /\ rowEpoch \in {0, Mine - 1, Mine, Mine + 1}
    /\ rowState \in Seq(Inputs \cup Others)
    /\ next \in 1 .. N + 1
    /\ batch \in Seq(Inputs) /\ Len(batch) <= BatchMax
    /\ phase \in Phases
    /\ (batch = <<>>) = (phase = "idle")
    /\ memKnown \in BOOLEAN
    /\ memVersion \in Nat
    /\ memState \in Seq(Inputs \cup Others)
    /\ conflicts \in 0 .. Attempts
    /\ losses \in 0 .. Losses
    /\ refusals \in 0 .. Refusals
    /\ Cardinality(late) <= Losses
    /\ answer \in [Inputs -> Answers]
    /\ answers \in [Inputs -> 0 .. 1]

\* The version counts the inputs applied: every write moves it by its own.
VersionCounts ==
    rowVersion = Len(rowState)

\* What the shard remembers is the row as it was at that version: while
\* nobody else has written, it is the row.
MemoryTrue ==
    memKnown =>
        /\ memVersion <= rowVersion
        /\ memVersion = rowVersion => memState = Base(rowState)

\* While a write is looked for, the row tells landed from absent: found
\* (Found), its inputs are there; at the version it was folded from they
\* are not.
LostIsTold ==
    lost # NoWrite =>
        /\ phase = "read" /\ ~memKnown /\ lost.ids = batch
        /\ Found(lost) => \A i \in Range(lost.ids) : Count(rowState, i) = 1
        /\ rowVersion = lost.exp => \A i \in Range(lost.ids) : Count(rowState, i) = 0

\* A suspect lives only while its batch's write sent again is on its way,
\* or while that write, lost too, is looked for: a read finds none alone
\* (fail's taking of the suspect in trip.rs is a safeguard). The write
\* sent again is the suspect itself: folded from the same version and
\* state, so keeping only the last copy loses nothing.
SuspectIsTheWrite ==
    suspect # NoWrite =>
        /\ suspect.ids = batch
        /\ phase = "send" \/ lost # NoWrite
        /\ lost # NoWrite => lost = suspect
        /\ phase = "send" =>
             /\ memKnown /\ memVersion = suspect.exp
             /\ Shape = "State" => memState \o batch = suspect.after

=============================================================================
