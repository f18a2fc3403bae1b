------------------------------- MODULE PerKey -------------------------------
(***************************************************************************)
(* Per-key batching on a sharded, thread-per-core engine (Ferry).          *)
(*                                                                         *)
(* Who moves, and in what steps:                                           *)
(*   - Callers, one per input. A caller computes its input's rank and      *)
(*     routes the key to a shard with hash(key) % shards. A caller on      *)
(*     another thread pushes the input into that shard's bounded intake    *)
(*     queue, in two steps (register as a pusher, then push). A caller     *)
(*     that is a task on that very shard (the fast path) is admitted       *)
(*     directly, in one shard step.                                        *)
(*   - Shards. Each one is a single thread, so each shard step below is    *)
(*     atomic: admit the oldest intake entry into its key's lane; take a   *)
(*     trip (a batch from each of up to TripMax lanes) and mark its lanes  *)
(*     busy; complete a trip in flight (each of its batches with outputs   *)
(*     or an error); after close, close the lanes once the intake is       *)
(*     sealed and empty, and exit once quiet.                              *)
(*   - The user, who may close the engine, once, at any moment.            *)
(*                                                                         *)
(* Time is left out. A lane with waiting inputs may be taken at any        *)
(* moment, which covers every max_batch_delay and every order in which     *)
(* deadlines fire; the batch is then as full as the lane allows: up to     *)
(* BatchMax inputs from its front. Every input weighs 1.                   *)
(*                                                                         *)
(* A trip is one call of the trip function: the batches of several keys    *)
(* of one shard, one batch per key, in one slot. With TripMax = 1 a trip   *)
(* is one batch: per-key batching without trips.                           *)
(*                                                                         *)
(* Flaw switches on one broken design choice; "None" is the design as      *)
(* built. Each broken choice must yield a counterexample on the guarantee  *)
(* it breaks (see the .cfg files and README.md).                           *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Inputs,      \* one input per caller
    RankOne,     \* inputs the caller's Order ranks 1; the others rank 2
    Local,       \* inputs whose caller is a task on its key's shard
    Keys,        \* keys are naturals; the model's hash of a key is the key
    Shards,      \* number of shards
    BatchMax,    \* max_batch_size
    Slots,       \* max_in_flight_batches: trips in flight per shard, shared
                 \* by its keys (a trip of one batch is a batch)
    IntakeMax,   \* capacity of a shard's intake queue
    WaitingMax,  \* max_waiting: waiting inputs per shard
    TripMax,     \* max_trip_batches: batches (so keys) in one trip; 1: a trip
                 \* is one batch, as without trips
    Flaw         \* "None", "NoBusyGuard", "TwoStepTake", "TwoStepAdmit",
                 \* "Unsorted", "KeyTwice"

Flaws == {"None", "NoBusyGuard", "TwoStepTake", "TwoStepAdmit", "Unsorted", "KeyTwice"}

ASSUME
    /\ Inputs # {} /\ IsFiniteSet(Inputs)
    /\ RankOne \subseteq Inputs
    /\ Local \subseteq Inputs
    /\ Keys # {} /\ Keys \subseteq Nat
    /\ Shards \in Nat \ {0}
    /\ BatchMax \in Nat \ {0}
    /\ Slots \in Nat \ {0}
    /\ IntakeMax \in Nat \ {0}
    /\ WaitingMax \in Nat \ {0}
    /\ TripMax \in Nat \ {0}
    /\ Flaw \in Flaws

ShardIds == 0 .. Shards - 1

\* ferry::route. The same hash picks the shard and finds the lane.
Hash(k) == k
ShardOf(k) == Hash(k) % Shards
KeysOf(s) == {k \in Keys : ShardOf(k) = s}

\* ferry_shard::Order::rank, run on the caller's thread.
RankOf(i) == IF i \in RankOne THEN 1 ELSE 2

NoKey == -1                              \* key of an input not submitted yet
NoRank == 0                              \* rank of an input not submitted yet
Never == 2 * Cardinality(Inputs) + 1     \* later than any history clock value

(* Where an input is, as its caller sees it:                               *)
(*   idle      the caller has not called submit                            *)
(*   checked   Flaw = "TwoStepAdmit" only: the caller saw the engine open, *)
(*             but its shard cannot know that it is about to push          *)
(*   pushing   the caller saw the engine open and, in the same atomic      *)
(*             step, was counted by its shard as mid-push                  *)
(*   intake    in its shard's intake queue, not admitted                   *)
(*   waiting   admitted: in its key's lane                                 *)
(*   sent      in a batch of a trip in flight                              *)
(*   ok        answered with its output                                    *)
(*   failed    answered with its batch's error                             *)
(*   full      refused, input handed back: Refused::Full                   *)
(*   closed    refused, input handed back: Refused::Closed                 *)
(* A caller on the fast path (Local) goes from idle straight to waiting,  *)
(* full or closed, in one shard step.                                      *)
Answers  == {"ok", "failed", "full", "closed"}
Statuses == {"idle", "checked", "pushing", "intake", "waiting", "sent"} \cup Answers

VARIABLES
    open,         \* the engine has not been closed
    lanesClosed,  \* lanesClosed[s]: shard s closed its lanes; it admits no more
    finished,     \* finished[s]: shard s drained after close and exited
    status,       \* status[i], as above
    key,          \* key[i], chosen by the caller
    rank,         \* rank[i], computed by the caller
    intake,       \* intake[s]: shard s's intake queue, oldest first
    lane,         \* lane[k]: key k's waiting inputs, in (rank, admission) order
    busy,         \* busy[k]: key k's lane has a batch in flight
    flight,       \* flight[s]: trips in flight on shard s, each a set of
                  \* batches [key, ins]
    marking,      \* Flaw = "TwoStepTake" only: keys taken, not yet marked busy
    answers,      \* answers[i]: outcomes caller i has received so far
    \* History for G2 only; the implementation keeps none of it.
    clock,        \* clock[k]: admissions and sends of key k so far
    admitAt,      \* admitAt[i]: key[i]'s clock when i was admitted, or Never
    sentAt        \* sentAt[i]: key[i]'s clock when i was sent, or Never

closing == <<open, lanesClosed, finished>>
caller  == <<status, key, rank, answers>>
shard   == <<intake, lane, busy, flight, marking>>
history == <<clock, admitAt, sentAt>>
vars    == <<closing, caller, shard, history>>

-----------------------------------------------------------------------------
(* Helpers *)

Min(a, b) == IF a <= b THEN a ELSE b
Range(q) == {q[j] : j \in DOMAIN q}

\* Inputs admitted on shard s and not sent yet.
WaitingOn(s) ==
    Cardinality({i \in Inputs : status[i] = "waiting" /\ ShardOf(key[i]) = s})

\* A lane in (rank, admission) order: an input of rank r goes after every
\* input whose rank is not above r.
InsertByRank(q, v, r) ==
    LET n == Cardinality({j \in DOMAIN q : rank[q[j]] <= r})
    IN  SubSeq(q, 1, n) \o <<v>> \o SubSeq(q, n + 1, Len(q))

\* Give each caller in ins its outcome.
Answer(ins, outcome) ==
    /\ status' = [i \in Inputs |-> IF i \in ins THEN outcome ELSE status[i]]
    /\ answers' = [i \in Inputs |-> IF i \in ins THEN answers[i] + 1 ELSE answers[i]]

\* ferry_shard::Lanes::admit on shard s, for input i of key k and rank r:
\* refused Closed once the lanes are closed, refused Full with WaitingMax
\* inputs already waiting on the shard, otherwise into k's lane after every
\* input of equal or lower rank (Flaw = "Unsorted": at the back). A busy
\* lane admits too; it is only not taken. Sets status, answers, lane and the
\* history; the caller of this operator sets key and rank.
LanesAdmit(s, i, k, r) ==
    IF lanesClosed[s]
      THEN /\ Answer({i}, "closed")
           /\ UNCHANGED <<lane, history>>
    ELSE IF WaitingOn(s) >= WaitingMax
      THEN /\ Answer({i}, "full")
           /\ UNCHANGED <<lane, history>>
    ELSE /\ lane' = [lane EXCEPT ![k] =
                       IF Flaw = "Unsorted" THEN Append(@, i) ELSE InsertByRank(@, i, r)]
         /\ status' = [status EXCEPT ![i] = "waiting"]
         /\ clock' = [clock EXCEPT ![k] = @ + 1]
         /\ admitAt' = [admitAt EXCEPT ![i] = clock[k] + 1]
         /\ UNCHANGED <<answers, sentAt>>

-----------------------------------------------------------------------------
(* Initial state *)

Init ==
    /\ open = TRUE
    /\ lanesClosed = [s \in ShardIds |-> FALSE]
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
    /\ clock = [k \in Keys |-> 0]
    /\ admitAt = [i \in Inputs |-> Never]
    /\ sentAt = [i \in Inputs |-> Never]

-----------------------------------------------------------------------------
(* Callers on other threads *)

\* submit, first step: pick a key, rank the input, and, in one atomic
\* operation, check that the intake is open and register as a pusher, so the
\* shard cannot seal its intake under the caller. Refused Closed at once
\* when the engine is closed.
\* TwoStepAdmit: the check is a plain read; the caller is not registered.
Enter(i) ==
    /\ i \notin Local
    /\ status[i] = "idle"
    /\ IF open
         THEN \E k \in Keys :
                /\ key' = [key EXCEPT ![i] = k]
                /\ rank' = [rank EXCEPT ![i] = RankOf(i)]
                /\ status' = [status EXCEPT ![i] =
                                IF Flaw = "TwoStepAdmit" THEN "checked" ELSE "pushing"]
                /\ UNCHANGED answers
         ELSE /\ Answer({i}, "closed")
              /\ UNCHANGED <<key, rank>>
    /\ UNCHANGED <<closing, shard, history>>

\* submit, second step: push into the shard's intake queue and deregister,
\* or be refused Full at once if the queue is at capacity. Nothing here
\* looks at open.
Push(i) ==
    /\ status[i] \in {"pushing", "checked"}
    /\ LET s == ShardOf(key[i]) IN
         IF Len(intake[s]) < IntakeMax
           THEN /\ intake' = [intake EXCEPT ![s] = Append(@, i)]
                /\ status' = [status EXCEPT ![i] = "intake"]
                /\ UNCHANGED answers
           ELSE /\ Answer({i}, "full")
                /\ UNCHANGED intake
    /\ UNCHANGED <<closing, key, rank, lane, busy, flight, marking, history>>

-----------------------------------------------------------------------------
(* A shard: one thread, so every step below is atomic *)

\* The fast path: a task on shard s submits a key that s owns. On the
\* shard's thread it checks open and admits in one step; no intake, no
\* channel. (A task cannot run once its shard has exited.)
SubmitLocal(i) ==
    /\ i \in Local
    /\ status[i] = "idle"
    /\ \E k \in Keys :
         LET s == ShardOf(k) IN
         /\ ~finished[s]
         /\ key' = [key EXCEPT ![i] = k]
         /\ rank' = [rank EXCEPT ![i] = RankOf(i)]
         /\ IF open
              THEN LanesAdmit(s, i, k, RankOf(i))
              ELSE /\ Answer({i}, "closed")
                   /\ UNCHANGED <<lane, history>>
    /\ UNCHANGED <<closing, intake, busy, flight, marking>>

\* Admit the oldest intake entry. An entry whose push succeeded is admitted
\* even if close came after the push: the lanes close only once the intake
\* is sealed and empty.
Admit(s) ==
    /\ ~finished[s]
    /\ intake[s] # <<>>
    /\ LET i == Head(intake[s]) IN
         /\ intake' = [intake EXCEPT ![s] = Tail(@)]
         /\ LanesAdmit(s, i, key[i], rank[i])
    /\ UNCHANGED <<closing, key, rank, busy, flight, marking>>

\* Take a trip, while a slot is free: a batch from the front of each lane in
\* ks, at most TripMax lanes, none of them busy, and mark those lanes busy in
\* the same step. The trip takes one slot, whatever its size. Time is left
\* out, so which lanes are ready, and in which order they joined the ready
\* line, is free: any set of idle lanes with waiting inputs may be the front
\* of the line. With TripMax = 1 this is the take of one batch. twice is
\* empty but for the KeyTwice flaw.
\* NoBusyGuard: a busy lane can be taken again.
\* TwoStepTake: the lanes are marked busy later, by separate steps (MarkBusy).
\* KeyTwice: from each lane in twice (a subset of ks) the trip also takes a
\* second batch, the inputs behind the first: the lanes are marked busy only
\* once the trip is formed, so a lane just taken still looks idle.
Take(s, ks, twice) ==
    LET \* the j-th batch from the front of k's lane (j = 2: KeyTwice only)
        Chunk(k, j) ==
            SubSeq(lane[k], (j - 1) * BatchMax + 1, Min(j * BatchMax, Len(lane[k])))
        \* how many inputs the trip takes from k's lane
        n(k) == Min(IF k \in twice THEN 2 * BatchMax ELSE BatchMax, Len(lane[k]))
        trip == {[key |-> k, ins |-> Chunk(k, 1)] : k \in ks}
                \cup {[key |-> k, ins |-> Chunk(k, 2)] : k \in twice}
        sent == UNION {Range(b.ins) : b \in trip}
    IN
    /\ ~finished[s]
    /\ ks # {}
    /\ \A k \in ks : lane[k] # <<>> /\ (Flaw = "NoBusyGuard" \/ ~busy[k])
    /\ \A k \in twice : Len(lane[k]) > BatchMax
    /\ Cardinality(trip) <= TripMax
    /\ Cardinality(flight[s]) < Slots
    /\ lane' = [k \in Keys |->
                  IF k \in ks THEN SubSeq(lane[k], n(k) + 1, Len(lane[k])) ELSE lane[k]]
    /\ flight' = [flight EXCEPT ![s] = @ \cup {trip}]
    /\ status' = [i \in Inputs |-> IF i \in sent THEN "sent" ELSE status[i]]
    \* the trip function gets each key's inputs in lane order
    /\ clock' = [k \in Keys |-> IF k \in ks THEN clock[k] + n(k) ELSE clock[k]]
    /\ sentAt' = [i \in Inputs |->
                    IF i \in sent
                      THEN LET q == lane[key[i]]
                           IN  clock[key[i]] + (CHOOSE j \in 1 .. Len(q) : q[j] = i)
                      ELSE sentAt[i]]
    /\ IF Flaw = "TwoStepTake"
         THEN /\ marking' = marking \cup ks
              /\ UNCHANGED busy
         ELSE /\ busy' = [k \in Keys |-> IF k \in ks THEN TRUE ELSE busy[k]]
              /\ UNCHANGED marking
    /\ UNCHANGED <<closing, key, rank, answers, intake, admitAt>>

\* The lanes a trip on lanes ks may take a second batch from: none, but for
\* the KeyTwice flaw.
TwiceChoices(ks) == IF Flaw = "KeyTwice" THEN SUBSET ks ELSE {{}}

\* TwoStepTake only: the delayed second half of a take.
MarkBusy(s, k) ==
    /\ ~finished[s]
    /\ k \in marking
    /\ busy' = [busy EXCEPT ![k] = TRUE]
    /\ marking' = marking \ {k}
    /\ UNCHANGED <<closing, caller, intake, lane, flight, history>>

\* A trip in flight completes: each of its batches with its outputs or with
\* an error (result[b]; one error for the whole trip is the case where all
\* are errors). Each caller of each batch gets one answer, the one slot is
\* freed and every lane of the trip released: taken again later if it still
\* has inputs, gone if empty.
Complete(s, t, result) ==
    /\ ~finished[s]
    /\ t \in flight[s]
    /\ flight' = [flight EXCEPT ![s] = @ \ {t}]
    /\ busy' = [k \in Keys |-> IF \E b \in t : b.key = k THEN FALSE ELSE busy[k]]
    /\ LET done == UNION {Range(b.ins) : b \in t}
           \* the outcome of the batch that holds input i
           outcome(i) == result[CHOOSE b \in t : i \in Range(b.ins)]
       IN  /\ status' = [i \in Inputs |-> IF i \in done THEN outcome(i) ELSE status[i]]
           /\ answers' = [i \in Inputs |-> IF i \in done THEN answers[i] + 1 ELSE answers[i]]
    /\ UNCHANGED <<closing, key, rank, intake, lane, marking, history>>

\* After close, once the intake is sealed (no registered pusher is left, and
\* none can register any more) and drained, the shard closes its lanes:
\* every waiting lane is ready from now on and nothing more is admitted.
CloseLanes(s) ==
    /\ ~open
    /\ ~lanesClosed[s]
    /\ \A i \in Inputs : status[i] = "pushing" => ShardOf(key[i]) # s
    /\ intake[s] = <<>>
    /\ lanesClosed' = [lanesClosed EXCEPT ![s] = TRUE]
    /\ UNCHANGED <<open, finished, caller, shard, history>>

\* With its lanes closed, the shard exits once quiet: no lane, nothing in
\* flight.
Finish(s) ==
    /\ lanesClosed[s]
    /\ ~finished[s]
    /\ flight[s] = {}
    /\ \A k \in KeysOf(s) : lane[k] = <<>> /\ k \notin marking
    /\ finished' = [finished EXCEPT ![s] = TRUE]
    /\ UNCHANGED <<open, lanesClosed, caller, shard, history>>

ShardStep(s) ==
    \/ Admit(s)
    \/ \E ks \in SUBSET KeysOf(s) : \E twice \in TwiceChoices(ks) : Take(s, ks, twice)
    \/ \E k \in KeysOf(s) : MarkBusy(s, k)
    \/ \E t \in flight[s] : \E result \in [t -> {"ok", "failed"}] : Complete(s, t, result)
    \/ CloseLanes(s)
    \/ Finish(s)

-----------------------------------------------------------------------------
(* The user *)

\* Engine::close: every intake refuses from now on, and each shard drains.
Close ==
    /\ open
    /\ open' = FALSE
    /\ UNCHANGED <<lanesClosed, finished, caller, shard, history>>

\* At rest: no caller waits for an outcome, and the engine is either open
\* or closed with every shard exited. Nothing has to happen any more (the
\* model may stop here; this is not a deadlock).
Done ==
    /\ \A i \in Inputs : status[i] \in {"idle"} \cup Answers
    /\ open \/ \A s \in ShardIds : finished[s]
    /\ UNCHANGED vars

-----------------------------------------------------------------------------

Next ==
    \/ \E i \in Inputs : Enter(i) \/ Push(i) \/ SubmitLocal(i)
    \/ \E s \in ShardIds : ShardStep(s)
    \/ Close
    \/ Done

\* A shard thread keeps running and batch functions return; a caller that
\* has started to push finishes its push. Whether and when callers submit
\* and the user closes is left free.
Fairness ==
    /\ \A s \in ShardIds : WF_vars(ShardStep(s))
    /\ \A i \in Inputs : WF_vars(Push(i))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Guarantees (docs/guarantees.md), checked by every configuration *)

\* The trips in flight, and the batches in flight (those of every trip).
TripsInFlight == UNION {flight[s] : s \in ShardIds}
InFlight == UNION TripsInFlight

\* G1: at no moment are two batches of one key in flight, in one trip or in
\* two.
OneInFlightPerKey ==
    \A b1, b2 \in InFlight : b1.key = b2.key => b1 = b2

\* a and b were in their lane at the same moment: each was admitted before
\* the other was sent (an input never admitted has admitAt = Never).
WaitedTogether(a, b) ==
    /\ admitAt[b] < sentAt[a]
    /\ admitAt[a] < sentAt[b]

\* (rank, admission) order.
Before(a, b) ==
    \/ rank[a] < rank[b]
    \/ rank[a] = rank[b] /\ admitAt[a] < admitAt[b]

\* G2: of two inputs of a key that waited together, the one first in
\* (rank, admission) order is sent first: in an earlier batch, or earlier in
\* the same batch. Nothing is said of an input admitted after another was
\* sent: such a late input may follow an input it ranks below.
SentInOrder ==
    \A a, b \in Inputs :
        ( /\ a # b
          /\ key[a] \in Keys /\ key[a] = key[b]
          /\ WaitedTogether(a, b)
          /\ Before(a, b)
          /\ sentAt[a] # Never \/ sentAt[b] # Never )
        => sentAt[a] < sentAt[b]

\* G3: a batch carries one key's inputs, and runs on that key's shard (so
\* every batch of a trip is of the trip's shard).
OneKeyPerBatch ==
    \A s \in ShardIds : \A t \in flight[s] : \A b \in t :
        /\ ShardOf(b.key) = s
        /\ \A j \in DOMAIN b.ins : key[b.ins[j]] = b.key

\* G6, and the bounds on slots (trips in flight), trip size and batch size.
BoundsHold ==
    \A s \in ShardIds :
        /\ Len(intake[s]) <= IntakeMax
        /\ WaitingOn(s) <= WaitingMax
        /\ Cardinality(flight[s]) <= Slots
        /\ \A t \in flight[s] :
             /\ Cardinality(t) \in 1 .. TripMax
             /\ \A b \in t : Len(b.ins) \in 1 .. BatchMax

\* G4, safety half: no caller gets two outcomes ...
AnsweredOnce ==
    \A i \in Inputs : answers[i] = IF status[i] \in Answers THEN 1 ELSE 0

\* ... and nothing accepted is lost: every pending input is in exactly one
\* place, the one its status names. The other half of G4 is the liveness
\* property EveryInputAnswered.
NothingLost ==
    /\ \A s \in ShardIds :
         /\ Len(intake[s]) = Cardinality(Range(intake[s]))
         /\ Range(intake[s]) = {i \in Inputs : status[i] = "intake" /\ ShardOf(key[i]) = s}
    /\ \A k \in Keys :
         /\ Len(lane[k]) = Cardinality(Range(lane[k]))
         /\ Range(lane[k]) = {i \in Inputs : status[i] = "waiting" /\ key[i] = k}
    /\ \A t1, t2 \in TripsInFlight : t1 # t2 => t1 \cap t2 = {}
    /\ \A b \in InFlight : Len(b.ins) = Cardinality(Range(b.ins))
    /\ \A b1, b2 \in InFlight : b1 # b2 => Range(b1.ins) \cap Range(b2.ins) = {}
    /\ {i \in Inputs : status[i] = "sent"} = UNION {Range(b.ins) : b \in InFlight}

\* G9: once a shard has finished draining, none of its inputs is in its
\* intake, a lane or a batch: nothing is accepted after the shard is gone,
\* so nothing can be left there to wait forever.
NothingAfterFinish ==
    \A i \in Inputs :
        (key[i] \in Keys /\ finished[ShardOf(key[i])])
            => status[i] \notin {"intake", "waiting", "sent"}

\* G4 and G9, liveness: every caller that calls submit is eventually
\* answered or refused. Written as "eventually, and from then on, no caller
\* is waiting": the two say the same here, since each caller submits at most
\* once and an outcome is final; this form is much cheaper for TLC to check.
EveryInputAnswered ==
    <>[](\A i \in Inputs : status[i] \in {"idle"} \cup Answers)

\* G9, liveness: after close every shard eventually exits (open never comes
\* back and an exited shard stays exited, so this is "close ~> all finished").
ShardsExitAfterClose ==
    <>[](open \/ \A s \in ShardIds : finished[s])

-----------------------------------------------------------------------------
(* Bookkeeping of the design as built, checked by PerKey.cfg only: a broken *)
(* design breaks these before the guarantee its variant is there to show.  *)

TypeOK ==
    /\ open \in BOOLEAN
    /\ lanesClosed \in [ShardIds -> BOOLEAN]
    /\ finished \in [ShardIds -> BOOLEAN]
    /\ status \in [Inputs -> Statuses]
    /\ key \in [Inputs -> Keys \cup {NoKey}]
    /\ rank \in [Inputs -> {1, 2, NoRank}]
    /\ intake \in [ShardIds -> Seq(Inputs)]
    /\ lane \in [Keys -> Seq(Inputs)]
    /\ busy \in [Keys -> BOOLEAN]
    /\ \A s \in ShardIds : \A t \in flight[s] : \A b \in t :
         b.key \in Keys /\ b.ins \in Seq(Inputs)
    /\ marking \subseteq Keys
    /\ answers \in [Inputs -> 0 .. 2]
    /\ clock \in [Keys -> 0 .. Never]
    /\ admitAt \in [Inputs -> 1 .. Never]
    /\ sentAt \in [Inputs -> 1 .. Never]

\* Intake entries are on their key's shard.
RoutedByHash ==
    \A s \in ShardIds : \A j \in DOMAIN intake[s] : ShardOf(key[intake[s][j]]) = s

\* Every lane is in (rank, admission) order.
LanesSorted ==
    \A k \in Keys : \A j \in 1 .. Len(lane[k]) - 1 : Before(lane[k][j], lane[k][j + 1])

\* busy[k] exactly while k has a batch in flight (G5: a lane exists only
\* while it has waiting inputs or a batch in flight).
BusyMatchesFlight ==
    \A k \in Keys : busy[k] = (\E b \in InFlight : b.key = k)

=============================================================================
