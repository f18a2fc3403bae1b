------------------------------- MODULE PerKey -------------------------------
(***************************************************************************)
(* Per-key batching on a sharded, thread-per-core engine (Ferry).          *)
(*                                                                         *)
(* Who moves:                                                              *)
(*   - callers, one per input, on threads of their own: each computes its  *)
(*     input's rank, routes the key to a shard (hash(key) % shards) and    *)
(*     pushes the input into that shard's bounded intake queue;            *)
(*   - shards, each one single-threaded: a shard step is atomic. A shard   *)
(*     admits what it finds in its intake into its lanes, takes a batch    *)
(*     from a lane while a slot is free, completes batches (success or     *)
(*     failure), and after close drains and finishes;                      *)
(*   - the user, who may close the engine once.                            *)
(*                                                                         *)
(* Time is not modelled. A lane may be taken at any moment once it has     *)
(* waiting inputs, which covers every value of max_batch_delay and every   *)
(* moment a deadline can fire; the batch is then as full as the lane      *)
(* allows (up to BatchMax inputs from its front). Weights are 1 per input. *)
(*                                                                         *)
(* Flaw selects one broken design choice; "None" is the design as built.   *)
(* Each broken choice must produce a counterexample (see the .cfg files).  *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Inputs,      \* one input per caller
    Keys,        \* keys are naturals; the model's hash of a key is the key
    Ranks,       \* ranks a caller's Order can give (lower is sent first)
    Shards,      \* number of shards
    BatchMax,    \* max_batch_size
    Slots,       \* max_in_flight_batches, per shard, shared by its keys
    IntakeMax,   \* capacity of a shard's intake queue
    WaitingMax,  \* max_queueing: waiting inputs per shard
    Flaw         \* "None", "NoBusyGuard", "TwoStepTake", "TwoStepAdmit", "Unsorted"

Flaws == {"None", "NoBusyGuard", "TwoStepTake", "TwoStepAdmit", "Unsorted"}

ASSUME
    /\ Inputs # {} /\ IsFiniteSet(Inputs)
    /\ Keys \subseteq Nat /\ Keys # {}
    /\ Ranks \subseteq Nat /\ Ranks # {}
    /\ Shards \in Nat \ {0}
    /\ BatchMax \in Nat \ {0}
    /\ Slots \in Nat \ {0}
    /\ IntakeMax \in Nat \ {0}
    /\ WaitingMax \in Nat \ {0}
    /\ Flaw \in Flaws

ShardIds == 0 .. Shards - 1

\* ferry::route: the same hash picks the shard and finds the lane.
Hash(k) == k
ShardOf(k) == Hash(k) % Shards
KeysOf(s) == {k \in Keys : ShardOf(k) = s}

NoKey == -1           \* key of an input not yet submitted
NoRank == 0           \* rank of an input not yet submitted (ranks start at 1)

(* Where an input is, from its caller's point of view.                     *)
(*   idle     the caller has not called submit yet                         *)
(*   checked  only with Flaw = "TwoStepAdmit": the caller saw the engine   *)
(*            open, but the shard cannot know it is about to push          *)
(*   pushing  the caller saw the engine open and is counted as mid-push    *)
(*            by its shard, in the same atomic step                        *)
(*   intake   in its shard's intake queue, not admitted yet                *)
(*   waiting  admitted: in its key's lane                                  *)
(*   sent     in a batch in flight                                         *)
(*   ok, failed          answered with the batch's output or its error     *)
(*   full, closed        refused (Refused::Full / Refused::Closed), the    *)
(*                       input handed back                                 *)
Pending  == {"pushing", "intake", "waiting", "sent"}
Answers  == {"ok", "failed", "full", "closed"}
Statuses == {"idle", "checked"} \cup Pending \cup Answers

VARIABLES
    open,      \* the engine has not been closed
    finished,  \* finished[s]: shard s drained after close and exited
    status,    \* status[i]: see above
    key,       \* key[i], chosen by the caller at submit
    rank,      \* rank[i], computed on the caller's thread at submit
    intake,    \* intake[s]: shard s's intake queue, oldest first
    lane,      \* lane[k]: k's waiting inputs, in (rank, admission) order
    busy,      \* busy[k]: k's lane has a batch in flight
    flight,    \* flight[s]: batches in flight on s, each [key, ins]
    marking,   \* only with Flaw = "TwoStepTake": keys taken, not yet marked busy
    answers,   \* answers[i]: how many outcomes caller i has received
    hist       \* hist[k]: k's admissions and sends, in order (history only)

vars == <<open, finished, status, key, rank, intake, lane, busy, flight,
          marking, answers, hist>>

-----------------------------------------------------------------------------
(* Helpers *)

Min(a, b) == IF a <= b THEN a ELSE b
Range(q) == {q[j] : j \in DOMAIN q}

\* Number of inputs admitted on shard s and not yet sent.
WaitingOn(s) == Cardinality({i \in Inputs : status[i] = "waiting" /\ ShardOf(key[i]) = s})

\* Where v goes in a lane kept in (rank, admission) order: after every
\* input whose rank is not above its own.
InsertByRank(q, v) ==
    LET n == Cardinality({j \in DOMAIN q : rank[q[j]] <= rank[v]})
    IN  SubSeq(q, 1, n) \o <<v>> \o SubSeq(q, n + 1, Len(q))

Answer(ins, outcome) ==
    /\ status' = [i \in Inputs |-> IF i \in ins THEN outcome ELSE status[i]]
    /\ answers' = [i \in Inputs |-> IF i \in ins THEN answers[i] + 1 ELSE answers[i]]

-----------------------------------------------------------------------------
(* Initial state *)

Init ==
    /\ open = TRUE
    /\ finished = [s \in ShardIds |-> FALSE]
    /\ status = [i \in Inputs |-> "idle"]
    /\ key = [i \in Inputs |-> NoKey]
    /\ rank = [i \in Inputs |-> NoRank]
    /\ intake = [s \in ShardIds |-> <<>>]
    /\ lane = [k \in Keys |-> <<>>]
    /\ busy = [k \in Keys |-> FALSE]
    /\ flight = [s \in ShardIds |-> {}]
    /\ marking = {}
    /\ answers = [i \in Inputs |-> 0]
    /\ hist = [k \in Keys |-> <<>>]

-----------------------------------------------------------------------------
(* Callers (any thread) *)

\* submit, first half: check that the engine is open and, in the same atomic
\* step, register as a caller mid-push on the key's shard, so the shard does
\* not finish under it. Refused Closed when the engine is closed.
\* TwoStepAdmit: the check is a plain read and the caller is not registered.
Enter(i) ==
    /\ status[i] = "idle"
    /\ IF open
         THEN \E k \in Keys, r \in Ranks :
                /\ key' = [key EXCEPT ![i] = k]
                /\ rank' = [rank EXCEPT ![i] = r]
                /\ status' = [status EXCEPT ![i] =
                                IF Flaw = "TwoStepAdmit" THEN "checked" ELSE "pushing"]
                /\ UNCHANGED answers
         ELSE /\ Answer({i}, "closed")
              /\ UNCHANGED <<key, rank>>
    /\ UNCHANGED <<open, finished, intake, lane, busy, flight, marking, hist>>

\* submit, second half: push into the shard's intake queue, or be refused
\* Full at once when the queue is at capacity. Nothing here looks at open.
Push(i) ==
    /\ status[i] \in {"pushing", "checked"}
    /\ LET s == ShardOf(key[i]) IN
         IF Len(intake[s]) < IntakeMax
           THEN /\ intake' = [intake EXCEPT ![s] = Append(@, i)]
                /\ status' = [status EXCEPT ![i] = "intake"]
                /\ UNCHANGED answers
           ELSE /\ Answer({i}, "full")
                /\ UNCHANGED intake
    /\ UNCHANGED <<open, finished, key, rank, lane, busy, flight, marking, hist>>

-----------------------------------------------------------------------------
(* A shard (one thread; every step below is atomic) *)

\* Admit the oldest entry of the intake. Checking open and admitting are one
\* step: after close an entry is refused Closed. Past WaitingMax it is
\* refused Full. Otherwise it joins its key's lane at its rank (after equal
\* ranks), or at the back with Flaw = "Unsorted". A busy lane still admits.
Admit(s) ==
    /\ ~finished[s]
    /\ intake[s] # <<>>
    /\ LET i == Head(intake[s])
           k == key[i]
       IN  /\ intake' = [intake EXCEPT ![s] = Tail(@)]
           /\ IF ~open
                THEN /\ Answer({i}, "closed")
                     /\ UNCHANGED <<lane, hist>>
              ELSE IF WaitingOn(s) >= WaitingMax
                THEN /\ Answer({i}, "full")
                     /\ UNCHANGED <<lane, hist>>
              ELSE /\ lane' = [lane EXCEPT ![k] =
                                 IF Flaw = "Unsorted" THEN Append(@, i)
                                                      ELSE InsertByRank(@, i)]
                   /\ status' = [status EXCEPT ![i] = "waiting"]
                   /\ hist' = [hist EXCEPT ![k] = Append(@, [ev |-> "admit", in |-> i])]
                   /\ UNCHANGED answers
    /\ UNCHANGED <<open, finished, key, rank, busy, flight, marking>>

\* Take a batch from the front of a lane that is not busy, while a slot is
\* free, and mark the lane busy in the same step.
\* NoBusyGuard: a busy lane can be taken again.
\* TwoStepTake: marking busy is a later, separate step (MarkBusy).
Take(s, k) ==
    /\ ~finished[s]
    /\ lane[k] # <<>>
    /\ Flaw = "NoBusyGuard" \/ ~busy[k]
    /\ Cardinality(flight[s]) < Slots
    /\ LET n     == Min(BatchMax, Len(lane[k]))
           batch == SubSeq(lane[k], 1, n)
       IN  /\ lane' = [lane EXCEPT ![k] = SubSeq(@, n + 1, Len(@))]
           /\ flight' = [flight EXCEPT ![s] = @ \cup {[key |-> k, ins |-> batch]}]
           /\ status' = [i \in Inputs |-> IF i \in Range(batch) THEN "sent" ELSE status[i]]
           /\ hist' = [hist EXCEPT ![k] =
                         @ \o [j \in 1 .. n |-> [ev |-> "send", in |-> batch[j]]]]
    /\ IF Flaw = "TwoStepTake"
         THEN /\ marking' = marking \cup {k}
              /\ UNCHANGED busy
         ELSE /\ busy' = [busy EXCEPT ![k] = TRUE]
              /\ UNCHANGED marking
    /\ UNCHANGED <<open, finished, key, rank, intake, answers>>

\* Only with Flaw = "TwoStepTake": the delayed second half of a take.
MarkBusy(s, k) ==
    /\ ~finished[s]
    /\ k \in marking
    /\ busy' = [busy EXCEPT ![k] = TRUE]
    /\ marking' = marking \ {k}
    /\ UNCHANGED <<open, finished, status, key, rank, intake, lane, flight,
                   answers, hist>>

\* A batch in flight completes, with its outputs or with an error. Either
\* way each of its callers gets exactly one answer and the lane is released:
\* taken again later if it still has inputs, gone (empty) if not.
Complete(s, b, outcome) ==
    /\ ~finished[s]
    /\ b \in flight[s]
    /\ flight' = [flight EXCEPT ![s] = @ \ {b}]
    /\ busy' = [busy EXCEPT ![b.key] = FALSE]
    /\ Answer(Range(b.ins), outcome)
    /\ UNCHANGED <<open, finished, key, rank, intake, lane, marking, hist>>

\* After close, the shard exits once its intake is empty, every lane is
\* drained, nothing is in flight and no registered caller is mid-push.
Finish(s) ==
    /\ ~open
    /\ ~finished[s]
    /\ intake[s] = <<>>
    /\ flight[s] = {}
    /\ \A k \in KeysOf(s) : lane[k] = <<>> /\ k \notin marking
    /\ \A i \in Inputs : status[i] = "pushing" => ShardOf(key[i]) # s
    /\ finished' = [finished EXCEPT ![s] = TRUE]
    /\ UNCHANGED <<open, status, key, rank, intake, lane, busy, flight, marking,
                   answers, hist>>

ShardStep(s) ==
    \/ Admit(s)
    \/ \E k \in KeysOf(s) : Take(s, k) \/ MarkBusy(s, k)
    \/ \E b \in flight[s], outcome \in {"ok", "failed"} : Complete(s, b, outcome)
    \/ Finish(s)

-----------------------------------------------------------------------------
(* The user *)

\* Engine::close: every intake refuses from now on; each shard drains.
Close ==
    /\ open
    /\ open' = FALSE
    /\ UNCHANGED <<finished, status, key, rank, intake, lane, busy, flight,
                   marking, answers, hist>>

\* Every caller has its outcome: nothing more happens (not a deadlock).
Done ==
    /\ \A i \in Inputs : status[i] \in Answers
    /\ UNCHANGED vars

-----------------------------------------------------------------------------

Next ==
    \/ \E i \in Inputs : Enter(i) \/ Push(i)
    \/ \E s \in ShardIds : ShardStep(s)
    \/ Close
    \/ Done

\* Shard threads keep running and batch functions return; a caller that has
\* started a push finishes it. Calling submit and close are left free.
Fairness ==
    /\ \A s \in ShardIds : WF_vars(ShardStep(s))
    /\ \A i \in Inputs : WF_vars(Push(i))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* History queries for G2 *)

Never == 2 * Cardinality(Inputs) + 1     \* beyond any position in hist

\* Position in hist[key[i]] of i's admission / send, or Never.
EventAt(i, ev) ==
    LET h == hist[key[i]]
        at == {j \in DOMAIN h : h[j] = [ev |-> ev, in |-> i]}
    IN  IF at = {} THEN Never ELSE CHOOSE j \in at : TRUE

AdmittedAt(i) == EventAt(i, "admit")
SentAt(i) == EventAt(i, "send")

\* a and b were in their lane at the same moment: each was admitted before
\* the other was sent.
WaitedTogether(a, b) ==
    /\ AdmittedAt(a) # Never /\ AdmittedAt(b) # Never
    /\ AdmittedAt(b) < SentAt(a)
    /\ AdmittedAt(a) < SentAt(b)

\* (rank, admission) order.
Before(a, b) ==
    \/ rank[a] < rank[b]
    \/ rank[a] = rank[b] /\ AdmittedAt(a) < AdmittedAt(b)

-----------------------------------------------------------------------------
(* Guarantees (SPEC section 1) *)

InFlight == UNION {flight[s] : s \in ShardIds}

\* G1: at no moment two batches of one key in flight.
OneInFlightPerKey ==
    \A b1, b2 \in InFlight : b1.key = b2.key => b1 = b2

\* G2: of two inputs of a key that waited together, the one first in
\* (rank, admission) order is sent first (in an earlier batch, or earlier in
\* the same batch). Nothing is said of an input admitted after another was
\* sent: a late input may follow an input it ranks below.
SentInOrder ==
    \A a, b \in Inputs :
        ( /\ a # b
          /\ key[a] \in Keys /\ key[a] = key[b]
          /\ WaitedTogether(a, b)
          /\ Before(a, b)
          /\ SentAt(a) # Never \/ SentAt(b) # Never )
        => SentAt(a) < SentAt(b)

\* G3: a batch carries one key's inputs, on that key's shard.
OneKeyPerBatch ==
    \A s \in ShardIds : \A b \in flight[s] :
        /\ ShardOf(b.key) = s
        /\ \A j \in DOMAIN b.ins : key[b.ins[j]] = b.key

\* G6 and the batch and slot bounds.
BoundsHold ==
    \A s \in ShardIds :
        /\ Len(intake[s]) <= IntakeMax
        /\ WaitingOn(s) <= WaitingMax
        /\ Cardinality(flight[s]) <= Slots
        /\ \A b \in flight[s] : Len(b.ins) \in 1 .. BatchMax

\* G4, safety half: nothing accepted is lost (each pending input is in
\* exactly one place that matches its status) and no caller is answered
\* twice. The other half is the liveness property EveryInputAnswered.
AnsweredOnce ==
    /\ \A i \in Inputs : answers[i] = IF status[i] \in Answers THEN 1 ELSE 0
    /\ \A i \in Inputs :
         LET s == ShardOf(key[i])
             inIntake == Cardinality({j \in DOMAIN intake[s] : intake[s][j] = i})
             inLane   == Cardinality({j \in DOMAIN lane[key[i]] : lane[key[i]][j] = i})
             inFlight == Cardinality({b \in flight[s] : i \in Range(b.ins)})
         IN  key[i] \in Keys =>
               /\ inIntake = IF status[i] = "intake" THEN 1 ELSE 0
               /\ inLane   = IF status[i] = "waiting" THEN 1 ELSE 0
               /\ inFlight = IF status[i] = "sent" THEN 1 ELSE 0

\* G9: once a shard has finished draining, none of its inputs is accepted,
\* admitted or in flight any more: nothing can be left behind to wait forever.
NothingAfterFinish ==
    \A i \in Inputs :
        (key[i] \in Keys /\ finished[ShardOf(key[i])])
            => status[i] \notin {"intake", "waiting", "sent"}

(* Internal bookkeeping of the design as built (checked in PerKey.cfg only:  *)
(* a broken design breaks these before the guarantee it exists to show).    *)

TypeOK ==
    /\ open \in BOOLEAN
    /\ finished \in [ShardIds -> BOOLEAN]
    /\ status \in [Inputs -> Statuses]
    /\ key \in [Inputs -> Keys \cup {NoKey}]
    /\ rank \in [Inputs -> Ranks \cup {NoRank}]
    /\ intake \in [ShardIds -> Seq(Inputs)]
    /\ lane \in [Keys -> Seq(Inputs)]
    /\ busy \in [Keys -> BOOLEAN]
    /\ \A s \in ShardIds : \A b \in flight[s] : b.key \in Keys /\ b.ins \in Seq(Inputs)
    /\ marking \subseteq Keys
    /\ answers \in [Inputs -> 0 .. 2]

\* A lane is sorted by (rank, admission).
LanesSorted ==
    \A k \in Keys : \A j \in 1 .. Len(lane[k]) - 1 : Before(lane[k][j], lane[k][j + 1])

\* busy[k] exactly when k has a batch in flight (G5: a lane lives only while
\* it has waiting inputs or a batch in flight).
BusyMatchesFlight ==
    \A k \in Keys : busy[k] = (\E b \in InFlight : b.key = k)

\* Inputs are routed to their key's shard.
RoutedByHash ==
    \A s \in ShardIds : \A j \in DOMAIN intake[s] : ShardOf(key[intake[s][j]]) = s

-----------------------------------------------------------------------------
(* Liveness *)

\* G4 and G9: every caller that called submit eventually gets its outcome.
EveryInputAnswered ==
    \A i \in Inputs : (status[i] # "idle") ~> (status[i] \in Answers)

\* G9: after close, every shard eventually finishes.
CloseFinishes ==
    (~open) ~> (\A s \in ShardIds : finished[s])

=============================================================================
