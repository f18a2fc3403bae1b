------------------------------ MODULE EventTime ------------------------------
(***************************************************************************)
(* The lateness hold of an event-time order (Order::event_time) on one     *)
(* key's lane, with time.                                                  *)
(*                                                                         *)
(* Each input carries an event time At[i] and arrives at some moment of a  *)
(* discrete clock: its hold ends at At[i] + Lateness. An input that        *)
(* arrives before its hold ends is admitted "within the bound"; one that   *)
(* arrives later is late: refused (refuse_late) or admitted unheld, as the *)
(* run chooses at its start. The lane keeps its inputs in event-time order *)
(* (ties by admission); the shard takes a batch from its front, of up to   *)
(* BatchMax inputs whose hold has ended (closing ends every hold), one     *)
(* batch in flight at a time (G1), at any moment: that covers every delay  *)
(* and every order of timers. Close may come at any moment; nothing is     *)
(* admitted after it.                                                      *)
(*                                                                         *)
(* What it shows: inputs admitted within the bound are sent in event-time  *)
(* order across batches (SentInOrder), a late input is never sent when     *)
(* late inputs are refused (LateNeverSent), and every input is answered or *)
(* refused. With Hold = FALSE (the order without a hold, as Order::by)     *)
(* SentInOrder must fail: an input sent at once is passed by an earlier    *)
(* one arriving after it (EventTimeNoHold.cfg).                            *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Inputs,    \* one input per caller, all of one key
    At,        \* At[i]: the event time of input i
    Lateness,  \* how long past its event time an input is held
    BatchMax,  \* max_batch_size
    TimeMax,   \* the clock stops here (every hold has ended by then)
    Hold       \* TRUE: the design as built; FALSE: no hold (the flaw)

ASSUME
    /\ Inputs # {} /\ IsFiniteSet(Inputs)
    /\ At \in [Inputs -> Nat]
    /\ Lateness \in Nat
    /\ BatchMax \in Nat \ {0}
    /\ TimeMax \in Nat /\ \A i \in Inputs : At[i] + Lateness <= TimeMax
    /\ Hold \in BOOLEAN

VARIABLES
    now,         \* the shard's clock
    refuseLate,  \* refuse_late, chosen once for the run
    state,       \* each input: "unsent", "waiting", "flying", "answered",
                 \* "late" (refused Late) or "closed" (refused Closed)
    arrivedAt,   \* when each admitted input arrived (-1: not admitted)
    lane,        \* the key's waiting inputs, in (event time, admission) order
    inFlight,    \* the key's batch in flight (<<>>: none)
    sent,        \* every input sent, in the order sent
    closed

vars == <<now, refuseLate, state, arrivedAt, lane, inFlight, sent, closed>>

\* The configurations' event times: input i happened at i - 1.
AtOfInput == [i \in Inputs |-> i - 1]

States == {"unsent", "waiting", "flying", "answered", "late", "closed"}

HoldEnd(i) == At[i] + Lateness

\* Admitted before its hold ended: the inputs the hold promises to order.
WithinBound(i) == arrivedAt[i] >= 0 /\ arrivedAt[i] < HoldEnd(i)

\* May leave in a batch now: its hold has ended, or closing ended it.
Free(i) == ~Hold \/ closed \/ HoldEnd(i) <= now

\* Lanes.admit: after every input of an event time <= its own, so ties
\* keep admission order.
InsertByRank(s, i) ==
    LET p == Cardinality({n \in 1 .. Len(s) : At[s[n]] <= At[i]})
    IN  SubSeq(s, 1, p) \o <<i>> \o SubSeq(s, p + 1, Len(s))

Range(s) == {s[n] : n \in 1 .. Len(s)}

TypeOK ==
    /\ now \in 0 .. TimeMax
    /\ refuseLate \in BOOLEAN
    /\ state \in [Inputs -> States]
    /\ arrivedAt \in [Inputs -> -1 .. TimeMax]
    /\ closed \in BOOLEAN

Init ==
    /\ now = 0
    /\ refuseLate \in BOOLEAN
    /\ state = [i \in Inputs |-> "unsent"]
    /\ arrivedAt = [i \in Inputs |-> -1]
    /\ lane = <<>>
    /\ inFlight = <<>>
    /\ sent = <<>>
    /\ closed = FALSE

\* An input arrives now: refused after close; refused Late if its hold has
\* ended and late inputs are refused; otherwise admitted at its rank.
Arrive(i) ==
    /\ state[i] = "unsent"
    /\ IF closed
         THEN /\ state' = [state EXCEPT ![i] = "closed"]
              /\ UNCHANGED <<arrivedAt, lane>>
         ELSE IF refuseLate /\ HoldEnd(i) <= now
           THEN /\ state' = [state EXCEPT ![i] = "late"]
                /\ UNCHANGED <<arrivedAt, lane>>
           ELSE /\ state' = [state EXCEPT ![i] = "waiting"]
                /\ arrivedAt' = [arrivedAt EXCEPT ![i] = now]
                /\ lane' = InsertByRank(lane, i)
    /\ UNCHANGED <<now, refuseLate, inFlight, sent, closed>>

\* The shard takes a batch from the front of the lane: only free inputs,
\* and only while the key has no batch in flight (G1).
Take ==
    /\ inFlight = <<>>
    /\ \E n \in 1 .. Len(lane) :
        /\ n <= BatchMax
        /\ \A m \in 1 .. n : Free(lane[m])
        /\ inFlight' = SubSeq(lane, 1, n)
        /\ lane' = SubSeq(lane, n + 1, Len(lane))
        /\ sent' = sent \o SubSeq(lane, 1, n)
        /\ state' = [i \in Inputs |->
                        IF i \in Range(SubSeq(lane, 1, n)) THEN "flying" ELSE state[i]]
    /\ UNCHANGED <<now, refuseLate, arrivedAt, closed>>

Complete ==
    /\ inFlight # <<>>
    /\ state' = [i \in Inputs |-> IF i \in Range(inFlight) THEN "answered" ELSE state[i]]
    /\ inFlight' = <<>>
    /\ UNCHANGED <<now, refuseLate, arrivedAt, lane, sent, closed>>

Tick ==
    /\ now < TimeMax
    /\ now' = now + 1
    /\ UNCHANGED <<refuseLate, state, arrivedAt, lane, inFlight, sent, closed>>

Close ==
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<now, refuseLate, state, arrivedAt, lane, inFlight, sent>>

Settled(i) == state[i] \in {"answered", "late", "closed"}

\* Every input is settled: the run rests.
Done ==
    /\ \A i \in Inputs : Settled(i)
    /\ UNCHANGED vars

Next ==
    \/ \E i \in Inputs : Arrive(i)
    \/ Take
    \/ Complete
    \/ Tick
    \/ Close
    \/ Done

Spec ==
    /\ Init
    /\ [][Next]_vars
    /\ \A i \in Inputs : WF_vars(Arrive(i))
    /\ WF_vars(Take)
    /\ WF_vars(Complete)
    /\ WF_vars(Tick)

(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)

\* Inputs admitted within the bound go in event-time order, across batches.
SentInOrder ==
    \A a, b \in 1 .. Len(sent) :
        (a < b /\ WithinBound(sent[a]) /\ WithinBound(sent[b]))
            => At[sent[a]] <= At[sent[b]]

\* With refuse_late, every input sent was admitted within the bound.
LateNeverSent ==
    refuseLate => \A n \in 1 .. Len(sent) : WithinBound(sent[n])

\* No batch holds an input still held, until close.
NothingSentHeld ==
    \A n \in 1 .. Len(inFlight) : Free(inFlight[n]) \/ closed

\* Each input is sent at most once.
SentOnce ==
    \A a, b \in 1 .. Len(sent) : a # b => sent[a] # sent[b]

EveryInputSettles == <>(\A i \in Inputs : Settled(i))

=============================================================================
