----------------------------- MODULE LostWrite ------------------------------
(***************************************************************************)
(* The write path of ferry::entity (engine/src/entity/trip.rs) for one     *)
(* key, with lost replies: a write whose reply was lost is told landed or  *)
(* absent by reading the key's row back.                                   *)
(*                                                                         *)
(* What is there:                                                          *)
(*   - The key's row in the store: a version (the inputs applied), the     *)
(*     owner epoch of its last write, its state: the inputs applied, in    *)
(*     order (the shard's inputs 1..N, and those of the other writers, ids *)
(*     above N), and, for a log, the tag of its last append (kept as the   *)
(*     head's state). A key never written reads as version 0, epoch 0.     *)
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
(*     (its write fences the shard). None of them writes a tag of the      *)
(*     shard's (a touch may leave the head's as it was: TouchKeepsEpoch).  *)
(*                                                                         *)
(* The store's write is conditional: a write folded from version v under   *)
(* epoch e lands iff the row is at version v and its epoch is at most e (a *)
(* row never written is at version 0), and then sets version v + (its      *)
(* inputs), epoch e and the state, in the same step. Shape "State" writes  *)
(* the state folded from what the shard knew (start_entities); shape "Log" *)
(* appends the inputs and keeps the append's tag as the head's state       *)
(* (start_log).                                                            *)
(*                                                                         *)
(* Tags. Every append of the shard carries a tag no other append carries   *)
(* (trip.rs's Carrier::tag). A read back compares the row's tag with one   *)
(* tag only: that of the write the batch looks for (its lost write or its  *)
(* suspect; a batch has at most one of them at a time). So the model      *)
(* keeps of a tag only whether it is that write's: TRUE for it, FALSE for  *)
(* every other, the other writers' included. Once the shard stops looking  *)
(* for a write (its batch is answered, or a copy sent again is lost and    *)
(* replaces it) its tag is like any other: FALSE, in the row and in the    *)
(* requests still to run. The state shape carries no tag (its write is     *)
(* told by the state it wrote): FALSE throughout.                          *)
(*                                                                         *)
(* How the shard carries a batch (its key's part of a trip, round by       *)
(* round):                                                                 *)
(*   - Read the row if it does not know the key: a row of a newer epoch    *)
(*     answers the batch Fenced; any other is remembered.                  *)
(*   - Fold the batch from what it knows. The fold may give no write (it   *)
(*     refuses every input, or fails; or the state read does not decode):  *)
(*     answer the batch without a write (answer_unsent): NotApplied, or    *)
(*     Unknown while a suspect is out. Else send the write. Landed:        *)
(*     remember what it wrote, answer Applied. Not landed (somebody else   *)
(*     wrote): forget the key and read it again, or answer NotApplied      *)
(*     after Attempts such writes. The request fails, not run (refused, or *)
(*     the connection broke before it was sent): answer NotApplied.        *)
(*   - Reply lost (the request ran, landed or not, or never ran): the      *)
(*     trip's deadline (give_up, resolve_within after its first loss) is   *)
(*     set if it was not, and the write is looked for (look_again): forget *)
(*     the key and read it back. Landed if the row is at the write's       *)
(*     version and the shard's epoch and holds what the write left: the    *)
(*     state it wrote, or, for a log, its tag: answer Applied. At the      *)
(*     version it was folded from it is absent: fold and send again, and   *)
(*     keep the earlier copy as suspect. At any other version somebody     *)
(*     else moved the key: answer Unknown.                                 *)
(*   - A suspect (a lost write found absent and sent again): if the write  *)
(*     sent again does not land, or its request fails, the earlier copy is *)
(*     looked for again (look_again) instead of folding again or answering *)
(*     NotApplied. A write that lands clears it; one whose reply is lost   *)
(*     replaces it (it is looked for in its place).                        *)
(*   - A read that fails answers the batch NotApplied, or, while a write   *)
(*     is looked for, looks again next round (a stutter here). So does a   *)
(*     connection that fails at the start of a round.                      *)
(*   - Every look (look_again, and a failed read or connection while a     *)
(*     write is looked for) answers the batch Unknown once the deadline    *)
(*     has passed. The deadline passing is a step of its own (Deadline),   *)
(*     possible at any moment once the batch looks for a write, and fair:  *)
(*     time goes on. (The trip's deadline may have been set by another     *)
(*     key's loss, and have passed when this key's write is lost: then     *)
(*     trip.rs answers Unknown at once, which here is Deadline and a read  *)
(*     that fails, the row unchanged between them.)                        *)
(* Each input ends with exactly one answer: Applied, NotApplied, Unknown   *)
(* or Fenced. Requests that fail, not run, and replies lost are not        *)
(* bounded: any request may fail or lose its reply, any number of times.   *)
(*                                                                         *)
(* Flaw = "NoVersion": the write's condition is the epoch alone, and a     *)
(* write whose reply was lost is simply sent again. Flaw = "Resend": the   *)
(* condition holds the version, but a write whose reply was lost is read,  *)
(* folded and sent afresh as if it were absent, without looking for it     *)
(* first. Flaw = "NoTag": a log's lost write is told landed by version and *)
(* epoch alone, as before trip.rs had tags. Flaw = "Unsent": a batch       *)
(* answered without a write is answered as if no earlier copy of its      *)
(* write were out (answer_unsent without its suspect check). Flaw =        *)
(* "NoGiveUp": only a failed read looks at give_up; look_again does not,   *)
(* as before trip.rs bounded every look.                                   *)
(*                                                                         *)
(* Conditions of the world, each switched by a constant:                   *)
(*   - TouchKeepsEpoch: the touch leaves the row's epoch, and a log's      *)
(*     head tag, as they were (MemoryStore::write_outside(key, |row|       *)
(*     row.version += 1)), so the row can reach a lost write's version at  *)
(*     the shard's epoch without it. The state, or the tag, tells them     *)
(*     apart.                                                              *)
(*   - LateLanding: a lost request that has not run by the time the shard  *)
(*     reads the row back may still run at any later moment (a session     *)
(*     that goes on with its statement after the connection failed). The   *)
(*     suspect, and for a log the tag, are what keep the design right      *)
(*     then.                                                               *)
(*   - Refusals: requests may fail without running (refused, broken);     *)
(*     FoldFails: a fold may give no write (every input refused, the fold  *)
(*     or the encoding failing, a state read that does not decode). Both   *)
(*     on for the design as built; off only for a variant, to keep its     *)
(*     counterexample the one it is for.                                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    N,                \* the key's inputs 1..N, submitted in this order
    BatchMax,         \* max_batch_size
    Mine,             \* the shard's owner epoch
    Attempts,         \* write_attempts
    Refusals,         \* TRUE: a request may fail without running
    FoldFails,        \* TRUE: a fold may give no write
    Touches,          \* writes of the outside writer, at most
    StaleWrites,      \* writes of the stale owner (epoch Mine - 1), at most
    NewerWrites,      \* writes of a newer owner (epoch Mine + 1), at most
    Shape,            \* "State" (start_entities) or "Log" (start_log)
    TouchKeepsEpoch,  \* FALSE: a touch writes epoch 0, no owner's;
                      \* TRUE: it leaves the row's epoch (and tag) as they were
    LateLanding,      \* TRUE: a lost request may land later, at any moment
    Flaw              \* "None" (the design as built), "NoVersion", "Resend",
                      \* "NoTag", "Unsent" or "NoGiveUp"

ASSUME
    /\ N \in Nat \ {0}
    /\ BatchMax \in Nat \ {0}
    /\ Mine \in Nat /\ Mine >= 2
    /\ Attempts \in Nat \ {0}
    /\ Refusals \in BOOLEAN
    /\ FoldFails \in BOOLEAN
    /\ Touches \in Nat /\ StaleWrites \in Nat /\ NewerWrites \in Nat
    /\ Shape \in {"State", "Log"}
    /\ TouchKeepsEpoch \in BOOLEAN
    /\ LateLanding \in BOOLEAN
    /\ Flaw \in {"None", "NoVersion", "Resend", "NoTag", "Unsent", "NoGiveUp"}
    \* a request still to run is dropped once the row has left the version
    \* it was folded from (it can never land): true only with the version
    \* in the condition
    /\ LateLanding => Flaw # "NoVersion"

Inputs == 1 .. N
\* Every write of somebody else applies one input of its own: ids above N.
Others == N + 1 .. N + Touches + StaleWrites + NewerWrites

Answers == {"none", "Applied", "NotApplied", "Unknown", "Fenced"}
Phases  == {"idle", "read", "send"}

\* A write as sent (trip.rs's Sent): the version it was folded from, its
\* inputs, the state it carries (the Log shape carries the inputs alone:
\* <<>> here), and whether its tag is the one the batch looks for.
NoWrite == [exp |-> -1, ids |-> <<>>, after |-> <<>>, tag |-> FALSE]

VARIABLES
    \* the key's row in the store (a key never written reads as version 0,
    \* epoch 0; every write moves the version on, so version 0 is "absent")
    rowVersion,   \* inputs applied to the key
    rowEpoch,     \* the owner epoch of the row's last write
    rowState,     \* the inputs applied, in order: ours (1..N) and others'
    rowTag,       \* Log: the head's tag is that of the write looked for
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
    due,          \* the trip's give_up has passed
    \* the other writers
    touches,      \* writes of the outside writer so far
    staleWrites,  \* writes of the stale owner so far
    newerWrites,  \* writes of the newer owner so far
    late,         \* LateLanding: the lost requests the store has not run yet
    \* the callers
    answer,       \* answer[i]: input i's answer ("none": not yet)
    answers       \* answers[i]: how many answers input i was given

row     == <<rowVersion, rowEpoch, rowState, rowTag>>
mem     == <<memKnown, memVersion, memState>>
shard   == <<next, batch, phase, mem, lost, suspect, conflicts, due>>
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

\* The batch looks for a write (a lost one, or a suspect).
Looking == lost # NoWrite \/ suspect # NoWrite

\* No tag is the one looked for any more.
Untag(ws) == {[w EXCEPT !.tag = FALSE] : w \in ws}

\* The requests still to run that can still land once the row is at
\* version v: those folded from v (a request folded from a version the row
\* has left is refused whenever it runs; versions only go up).
Live(ws, v) == {w \in ws : w.exp >= v}

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
\* the inputs appended and the append's tag at its head (Log).
NewState(w) == IF Shape = "State" THEN w.after ELSE rowState \o w.ids

\* What the row read back says of a lost write: it landed iff the row is at
\* its version and the shard's epoch and holds what the write left: for a
\* state, the state it wrote; for a log, its tag (trip.rs's known_from,
\* with Sent::state). NoTag: version and epoch alone, for a log.
Found(w) ==
    /\ rowVersion = w.exp + Len(w.ids)
    /\ rowEpoch = Mine
    /\ Shape = "State" => rowState = w.after
    /\ Shape = "Log" => Flaw = "NoTag" \/ rowTag = w.tag

-----------------------------------------------------------------------------
(* The shard *)

Init ==
    /\ rowVersion = 0
    /\ rowEpoch = 0
    /\ rowState = <<>>
    /\ rowTag = FALSE
    /\ next = 1
    /\ batch = <<>>
    /\ phase = "idle"
    /\ memKnown = FALSE
    /\ memVersion = 0
    /\ memState = <<>>
    /\ lost = NoWrite
    /\ suspect = NoWrite
    /\ conflicts = 0
    /\ due = FALSE
    /\ touches = 0
    /\ staleWrites = 0
    /\ newerWrites = 0
    /\ late = {}
    /\ answer = [i \in Inputs |-> "none"]
    /\ answers = [i \in Inputs |-> 0]

\* The batch's inputs are answered a, and the key is free for its next one
\* (its run, with what it was looking for and the trip's deadline, is gone).
Answer(a) ==
    /\ answer' = [i \in Inputs |-> IF i \in Range(batch) THEN a ELSE answer[i]]
    /\ answers' = [i \in Inputs |->
                     IF i \in Range(batch) THEN answers[i] + 1 ELSE answers[i]]
    /\ batch' = <<>>
    /\ phase' = "idle"
    /\ lost' = NoWrite
    /\ suspect' = NoWrite
    /\ due' = FALSE

\* ... and, the row unchanged, no tag is the one looked for any more.
AnswerUnchanged(a) ==
    /\ Answer(a)
    /\ rowTag' = FALSE
    /\ late' = Untag(late)
    /\ UNCHANGED <<rowVersion, rowEpoch, rowState>>

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
    /\ UNCHANGED <<row, mem, lost, suspect, due, writers, answer, answers>>

\* Phases 1 and 2: read the row and judge it (trip.rs's known_from). A
\* lost write is found landed (Found), moved by somebody else (at any other
\* version than the one it was folded from: Unknown), or absent (at the
\* version it was folded from: kept as suspect, and judged as any key
\* read). A newer epoch's row is Fenced; any other row is remembered, to
\* fold from. (A state that does not decode is answered as a fold that
\* gives no write: Send's Unsent, the key remembered or not, which Evict
\* covers.)
Read ==
    /\ phase = "read"
    /\ IF lost # NoWrite /\ Found(lost)
         THEN /\ AnswerUnchanged("Applied")
              /\ Remember(rowVersion, lost.after)
       ELSE IF lost # NoWrite /\ rowVersion # lost.exp
         THEN /\ AnswerUnchanged("Unknown")
              /\ UNCHANGED mem
       ELSE IF rowEpoch > Mine
         THEN /\ AnswerUnchanged("Fenced")
              /\ Forget
       ELSE /\ Remember(rowVersion, Base(rowState))
            /\ phase' = "send"
            /\ lost' = NoWrite
            /\ suspect' = IF lost # NoWrite THEN lost ELSE suspect
            /\ UNCHANGED <<row, late, batch, due, answer, answers>>
    /\ UNCHANGED <<next, conflicts, touches, staleWrites, newerWrites>>

\* The read fails (the store is away, or the connection cannot be made;
\* trip.rs's fail): a batch that looks for no write was not applied. One
\* that looks for a write looks again next round (changing nothing: a
\* stutter, left out), until give_up has passed: then Unknown.
ReadFails ==
    /\ phase = "read"
    /\ IF ~Looking
         THEN AnswerUnchanged("NotApplied")
         ELSE /\ due
              /\ AnswerUnchanged("Unknown")
    /\ UNCHANGED <<next, mem, conflicts, touches, staleWrites, newerWrites>>

\* give_up has passed, for a look (NoGiveUp: never, but for a failed read).
GivenUp == due /\ Flaw # "NoGiveUp"

\* trip.rs's look_again: the batch's write w may have landed: forget the
\* key and read it back next round, unless give_up has passed (Unknown).
LookAgain(w) ==
    /\ Forget
    /\ IF GivenUp
         THEN AnswerUnchanged("Unknown")
         ELSE /\ lost' = w
              /\ suspect' = NoWrite
              /\ phase' = "read"
              /\ UNCHANGED <<row, late, batch, due, answer, answers>>

\* trip.rs's answer_unsent: a batch answered without a write of this round
\* is answered a, or Unknown while its suspect is out (that copy may land
\* yet). Unsent: a, whatever is out.
AnswerUnsent(a) ==
    IF suspect # NoWrite /\ Flaw # "Unsent"
      THEN AnswerUnchanged("Unknown")
      ELSE AnswerUnchanged(a)

\* What the shard does once a write's reply is lost:
\*   as built: look for it (look_again; a suspect is dropped: the copy
\*   lost now is looked for in its place);
\*   NoVersion: send the same write again, without looking;
\*   Resend: forget the key and read, fold and write it afresh, as if the
\*   write were absent, without looking for it.
OnLost(w) ==
    CASE Flaw = "NoVersion" ->
             UNCHANGED <<mem, lost, suspect, phase, batch, due, answer, answers>>
      [] Flaw = "Resend" ->
             /\ Forget
             /\ phase' = "read"
             /\ UNCHANGED <<lost, suspect, batch, due, answer, answers>>
      [] OTHER ->
             /\ Forget
             /\ IF GivenUp
                  THEN Answer("Unknown")
                  ELSE /\ lost' = w
                       /\ suspect' = NoWrite
                       /\ phase' = "read"
                       /\ UNCHANGED <<batch, due, answer, answers>>

\* The shard looks for a write it has lost (as built, and with the flaws
\* but NoVersion and Resend), rather than sending it again or afresh.
LooksForLost == Flaw \notin {"NoVersion", "Resend"}

\* Phases 3 and 4: the fold of the batch from what the shard remembers, the
\* conditional write, and its outcome (trip.rs's judge, send and settle).
\* The store judges the write in one step.
\*   - Reply delivered, landed: remembered (the version and state it
\*     wrote) and answered Applied; a suspect is cleared.
\*   - Reply delivered, not landed (somebody else wrote): with a suspect,
\*     look for it; else forgotten, and read again, or answered NotApplied
\*     after Attempts such writes.
\*   - The request fails, not run (Refused, or Broken: the connection
\*     failed before it was sent): with a suspect, look for it; else
\*     answered NotApplied and forgotten. The connection may also fail at
\*     the start of the round (trip.rs's fail), before a write from what
\*     the shard remembers: answered NotApplied, and still remembered. (A
\*     suspect never meets that: it lives within one round.)
\*   - Reply lost: the request was run (landed or not) or never was; with
\*     LateLanding it may instead stay in the store, to run at any later
\*     moment. The write lost is looked for, with its own tag.
\*   - FoldFails: the fold gives no write (it refuses every input, or the
\*     fold or the encoding fails): the batch is answered without one
\*     (answer_unsent), nothing sent.
Send ==
    /\ phase = "send"
    /\ LET w  == [exp |-> memVersion, ids |-> batch,
                  after |-> IF Shape = "State" THEN memState \o batch ELSE <<>>,
                  tag |-> FALSE]
           \* the write, once lost: its tag is the one looked for from now
           \* on, unless it is not looked for at all
           lw == [w EXCEPT !.tag = Shape = "Log" /\ LooksForLost /\ ~GivenUp]
       IN  \/ /\ Lands(w)
              /\ rowVersion' = w.exp + Len(w.ids)
              /\ rowEpoch' = Mine
              /\ rowState' = NewState(w)
              /\ rowTag' = FALSE
              /\ late' = Untag(Live(late, w.exp + Len(w.ids)))
              /\ Answer("Applied")
              /\ Remember(w.exp + Len(w.ids), w.after)
              /\ UNCHANGED conflicts
           \/ /\ ~Lands(w)
              /\ IF suspect # NoWrite
                   THEN /\ LookAgain(suspect)
                        /\ UNCHANGED conflicts
                   ELSE /\ conflicts' = conflicts + 1
                        /\ Forget
                        /\ IF conflicts + 1 >= Attempts
                             THEN AnswerUnchanged("NotApplied")
                             ELSE /\ phase' = "read"
                                  /\ UNCHANGED <<row, late, batch, lost, suspect,
                                                 due, answer, answers>>
           \/ /\ Refusals
              /\ IF suspect # NoWrite
                   THEN LookAgain(suspect)
                   ELSE /\ AnswerUnchanged("NotApplied")
                        /\ Forget \/ UNCHANGED mem
              /\ UNCHANGED conflicts
           \/ /\ \E fate \in {"ran", "never", "late"} :
                   /\ fate = "never" => ~LateLanding
                   /\ fate = "late" => LateLanding
                   /\ LET landed == fate = "ran" /\ Lands(lw)
                          v      == IF landed THEN lw.exp + Len(lw.ids)
                                              ELSE rowVersion
                          held   == IF fate = "late" THEN {lw} ELSE {}
                      IN  /\ rowVersion' = v
                          /\ rowEpoch' = IF landed THEN Mine ELSE rowEpoch
                          /\ rowState' = IF landed THEN NewState(lw)
                                                   ELSE rowState
                          \* the tag looked for until now (a suspect's) is
                          \* no more: only lw's is
                          /\ rowTag' = (landed /\ lw.tag)
                          /\ late' = Live(Untag(late) \cup held, v)
              /\ OnLost(lw)
              /\ UNCHANGED conflicts
           \/ /\ FoldFails
              /\ AnswerUnsent("NotApplied")
              /\ UNCHANGED <<mem, conflicts>>
    /\ UNCHANGED <<next, touches, staleWrites, newerWrites>>

\* The shard's memory makes room for other keys (it holds `remember` keys
\* at most; none with remember(0)): the key is forgotten, and its next
\* batch reads it. (A key forgotten between a round's read phase and its
\* judge is read next round: the same as forgotten before the batch.)
Evict ==
    /\ memKnown
    /\ phase = "idle"
    /\ Forget
    /\ UNCHANGED <<row, next, batch, phase, lost, suspect, conflicts, due,
                   writers, answer, answers>>

\* The shard: one step of the key's batch at a time (its trip's rounds).
Shard == Take \/ Read \/ ReadFails \/ Send

\* Time passes the trip's give_up (resolve_within after its first lost
\* reply): possible at any moment once the batch looks for a write, and
\* for good. (Earlier, while it looks for none, it changes nothing: a look
\* happens only once the batch has lost a write.)
Deadline ==
    /\ ~due
    /\ Looking
    /\ due' = TRUE
    /\ UNCHANGED <<row, next, batch, phase, mem, lost, suspect, conflicts,
                   writers, answer, answers>>

-----------------------------------------------------------------------------
(* The other writers: each write applies one input of its own (an id       *)
(* above N) and moves the version on by one, in one step of the store; no  *)
(* request of the shard still to run can land after it.                    *)

\* The outside writer, outside every condition (a touch, a migration, an
\* operator's fix). It writes epoch 0, an epoch no owner has; with
\* TouchKeepsEpoch it leaves the row's epoch and a log's head tag as they
\* were, as MemoryStore::write_outside(key, |row| row.version += 1) does.
Touch ==
    /\ touches < Touches
    /\ touches' = touches + 1
    /\ rowVersion' = rowVersion + 1
    /\ rowEpoch' = IF TouchKeepsEpoch THEN rowEpoch ELSE 0
    /\ rowState' = rowState \o <<NextOther>>
    /\ rowTag' = (TouchKeepsEpoch /\ rowTag)
    /\ late' = Live(late, rowVersion + 1)
    /\ UNCHANGED <<shard, staleWrites, newerWrites, answer, answers>>

\* An owner of an older epoch, still writing: read-modify-write on the
\* same condition, in one step; it lands only while no newer epoch wrote.
Stale ==
    /\ staleWrites < StaleWrites
    /\ rowEpoch <= Mine - 1
    /\ staleWrites' = staleWrites + 1
    /\ rowVersion' = rowVersion + 1
    /\ rowEpoch' = Mine - 1
    /\ rowState' = rowState \o <<NextOther>>
    /\ rowTag' = FALSE
    /\ late' = Live(late, rowVersion + 1)
    /\ UNCHANGED <<shard, touches, newerWrites, answer, answers>>

\* The key's next owner: its write always lands, and fences the shard.
Newer ==
    /\ newerWrites < NewerWrites
    /\ newerWrites' = newerWrites + 1
    /\ rowVersion' = rowVersion + 1
    /\ rowEpoch' = Mine + 1
    /\ rowState' = rowState \o <<NextOther>>
    /\ rowTag' = FALSE
    /\ late' = Live(late, rowVersion + 1)
    /\ UNCHANGED <<shard, touches, staleWrites, answer, answers>>

\* LateLanding: the store runs a lost request only now (its session still
\* ran it after the connection failed), on its own condition: it lands
\* (and no other still to run can after it), or is refused on the epoch.
LateRun ==
    /\ \E w \in late :
         IF Lands(w)
           THEN /\ rowVersion' = w.exp + Len(w.ids)
                /\ rowEpoch' = Mine
                /\ rowState' = NewState(w)
                /\ rowTag' = w.tag
                /\ late' = Live(late \ {w}, w.exp + Len(w.ids))
           ELSE /\ late' = late \ {w}
                /\ UNCHANGED <<rowVersion, rowEpoch, rowState, rowTag>>
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
    \/ Deadline
    \/ Evict
    \/ Touch
    \/ Stale
    \/ Newer
    \/ LateRun
    \/ Done

\* The shard keeps working (its trips go round, the store answers or the
\* connection fails), and time goes on; the other writers, failed requests
\* and lost replies are left free.
Spec == Init /\ [][Next]_vars /\ WF_vars(Shard) /\ WF_vars(Deadline)

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

Writes == [exp : Nat, ids : Seq(Inputs), after : Seq(Inputs \cup Others),
           tag : BOOLEAN]

TypeOK ==
    /\ rowVersion \in Nat
    /\ rowEpoch \in {0, Mine - 1, Mine, Mine + 1}
    /\ rowState \in Seq(Inputs \cup Others)
    /\ rowTag \in BOOLEAN
    /\ next \in 1 .. N + 1
    /\ batch \in Seq(Inputs) /\ Len(batch) <= BatchMax
    /\ phase \in Phases
    /\ (batch = <<>>) = (phase = "idle")
    /\ memKnown \in BOOLEAN
    /\ memVersion \in Nat
    /\ memState \in Seq(Inputs \cup Others)
    /\ lost \in Writes \cup {NoWrite}
    /\ suspect \in Writes \cup {NoWrite}
    /\ conflicts \in 0 .. Attempts
    /\ due \in BOOLEAN
    /\ late \subseteq Writes
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
\* within the round that found it absent (so no read, and no connection
\* made at the start of a round, finds one: fail's taking of the suspect
\* in trip.rs is a safeguard). The write sent again is folded from the
\* same version and state as the suspect. A batch looks for one write at
\* a time.
SuspectIsTheWrite ==
    /\ ~(lost # NoWrite /\ suspect # NoWrite)
    /\ suspect # NoWrite =>
         /\ suspect.ids = batch
         /\ phase = "send"
         /\ memKnown /\ memVersion = suspect.exp
         /\ Shape = "State" => memState \o batch = suspect.after

\* Tags: only the write looked for has the tag looked for, and the row has
\* it only once that write landed; at most one request, or the row, has it.
\* give_up is set only once a write was lost.
TagIsTheWrite ==
    LET sought == IF lost # NoWrite THEN lost ELSE suspect IN
    /\ Shape = "State" => ~rowTag /\ \A w \in late : ~w.tag
    /\ rowTag \/ (\E w \in late : w.tag) => Looking /\ sought.tag
    /\ rowTag => \A i \in Range(sought.ids) : Count(rowState, i) = 1
    /\ \A w \in late : w.tag => w = sought
    /\ Cardinality({w \in late : w.tag}) + (IF rowTag THEN 1 ELSE 0) <= 1
    /\ due => Looking

\* A request still to run was folded from the row's version, of a batch
\* of the shard.
LateIsLive ==
    \A w \in late : w.exp = rowVersion

=============================================================================
