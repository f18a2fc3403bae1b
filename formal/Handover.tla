------------------------------ MODULE Handover ------------------------------
(***************************************************************************)
(* A key's handover between two service instances, each embedding Ferry,   *)
(* with keys partitioned by an outside layer (a Kafka consumer group).     *)
(*                                                                         *)
(* What is there:                                                          *)
(*   - Per key, a source log of inputs 1..N (a Kafka partition) and a      *)
(*     committed offset: the highest input the group has committed.        *)
(*   - The partition map: per key, its owner and an owner epoch. The map   *)
(*     may move a key to the other owner at any moment (Moves times at     *)
(*     most), bumping the epoch, whether or not the old owner noticed.     *)
(*   - The store: per key one row holding a version, the owner epoch of    *)
(*     the owner that took the row last, and the value: the inputs         *)
(*     applied so far, in the order they were applied.                     *)
(*   - Each owner's view of each key: the epoch it was assigned with,      *)
(*     whether it is serving the key, the next input it reads from the     *)
(*     log, its Ferry lane (inputs read, not in a batch yet), at most one  *)
(*     batch in flight (G1 inside one engine), and the highest input       *)
(*     answered ok (what it may commit).                                   *)
(*                                                                         *)
(* How an owner works:                                                     *)
(*   - Assign: the map names it; before serving it takes the row in one    *)
(*     store statement: it writes the new epoch into the row and reads     *)
(*     the last input applied. It then reads the log from the committed    *)
(*     offset, skipping what the row says is applied (re-consumed inputs). *)
(*   - A batch is one read of the row (its version) and one conditional    *)
(*     write that appends the batch's inputs. As built the write holds     *)
(*     only if the version is the one read and the row's epoch is the      *)
(*     owner's. Refused on the version: a conflict, read again and retry.  *)
(*     Refused on the epoch: fenced, final: the batch's callers get an     *)
(*     error, nothing is applied, and the owner stops serving the key.     *)
(*   - Commit: an owner commits the inputs answered ok, never more, and    *)
(*     only while the map still names it (the group refuses a commit from  *)
(*     an owner that was replaced).                                        *)
(*   - Stop: an owner that has lost a key notices it sooner or later and   *)
(*     reads no more of its log; a batch in flight and what is in its lane *)
(*     still run, as they would in Ferry.                                  *)
(* An owner whose key was moved and that has not noticed (a zombie) keeps  *)
(* working as before. "Flush, then commit" on a revocation that the owner  *)
(* does notice is one of the interleavings: it answers its batches,        *)
(* commits, and only then does the map move.                               *)
(*                                                                         *)
(* Flaw = "NoFence": the write's condition is the version alone. A zombie  *)
(* that meets a conflict reads again and writes, however stale it is.      *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Keys,      \* the keys (one partition each)
    Owners,    \* the two service instances
    First,     \* the owner the map names first
    N,         \* inputs per key in the source log: 1..N
    BatchMax,  \* max_batch_size
    Moves,     \* how many times the map may move a key
    Flaw       \* "None" (the design as built) or "NoFence"

ASSUME
    /\ Keys # {} /\ IsFiniteSet(Keys)
    /\ Cardinality(Owners) = 2
    /\ First \in Owners
    /\ N \in Nat \ {0}
    /\ BatchMax \in Nat \ {0}
    /\ Moves \in Nat
    /\ Flaw \in {"None", "NoFence"}

Other(o) == CHOOSE p \in Owners : p # o
Seqs == 1 .. N
Phases == {"none", "read", "write"}   \* of an owner's batch for a key

VARIABLES
    \* the partition map, per key
    owner,        \* owner[k]
    epoch,        \* epoch[k]: bumped at every move; the first owner has 1
    moves,        \* moves[k]: moves so far
    committed,    \* committed[k]: highest input committed (0: none)
    \* the store, per key
    version,      \* version[k]: bumped by every applied write
    rowEpoch,     \* rowEpoch[k]: epoch of the owner that took the row last
    applied,      \* applied[k]: inputs applied, in the order applied
    \* each owner o's view of each key k
    mine,         \* mine[o][k]: epoch o was assigned k with (0: never)
    serving,      \* serving[o][k]: o reads k's log
    next,         \* next[o][k]: next input o reads from k's log
    skipTo,       \* skipTo[o][k]: inputs up to this were applied when o took the row
    lane,         \* lane[o][k]: inputs read, waiting in o's Ferry lane
    batch,        \* batch[o][k]: o's batch of k in flight (<<>>: none)
    phase,        \* phase[o][k]: "read" (to read the row), "write", or "none"
    readVersion,  \* readVersion[o][k]: the version the batch read
    acked,        \* acked[o][k]: highest input answered ok to o
    \* history, for the properties only
    writes        \* writes[k]: per applied write, [by: the writer's epoch,
                  \* row: the row's epoch then]

map    == <<owner, epoch, moves, committed>>
store  == <<version, rowEpoch, applied>>
owners == <<mine, serving, next, skipTo, lane, batch, phase, readVersion, acked>>
vars   == <<map, store, owners, writes>>

-----------------------------------------------------------------------------
(* Helpers *)

Min(a, b) == IF a <= b THEN a ELSE b
Max(a, b) == IF a >= b THEN a ELSE b
Range(q) == {q[j] : j \in DOMAIN q}
Last(q) == IF q = <<>> THEN 0 ELSE q[Len(q)]

\* The owner o's view of key k after a fence or before an assignment.
Idle(o, k) == lane[o][k] = <<>> /\ batch[o][k] = <<>>

-----------------------------------------------------------------------------
(* Initial state: nothing assigned, nothing read, nothing applied *)

Init ==
    /\ owner = [k \in Keys |-> First]
    /\ epoch = [k \in Keys |-> 1]
    /\ moves = [k \in Keys |-> 0]
    /\ committed = [k \in Keys |-> 0]
    /\ version = [k \in Keys |-> 0]
    /\ rowEpoch = [k \in Keys |-> 0]
    /\ applied = [k \in Keys |-> <<>>]
    /\ mine = [o \in Owners |-> [k \in Keys |-> 0]]
    /\ serving = [o \in Owners |-> [k \in Keys |-> FALSE]]
    /\ next = [o \in Owners |-> [k \in Keys |-> 1]]
    /\ skipTo = [o \in Owners |-> [k \in Keys |-> 0]]
    /\ lane = [o \in Owners |-> [k \in Keys |-> <<>>]]
    /\ batch = [o \in Owners |-> [k \in Keys |-> <<>>]]
    /\ phase = [o \in Owners |-> [k \in Keys |-> "none"]]
    /\ readVersion = [o \in Owners |-> [k \in Keys |-> 0]]
    /\ acked = [o \in Owners |-> [k \in Keys |-> 0]]
    /\ writes = [k \in Keys |-> <<>>]

-----------------------------------------------------------------------------
(* The partition map *)

\* The group moves k to the other owner and bumps its epoch. The old owner
\* is not asked: it may have a batch in flight and inputs in its lane.
Move(k) ==
    /\ moves[k] < Moves
    /\ owner' = [owner EXCEPT ![k] = Other(@)]
    /\ epoch' = [epoch EXCEPT ![k] = @ + 1]
    /\ moves' = [moves EXCEPT ![k] = @ + 1]
    /\ UNCHANGED <<committed, store, owners, writes>>

-----------------------------------------------------------------------------
(* An owner o, for a key k *)

\* On assignment, before serving: one store statement writes the new epoch
\* into the row and returns the last input applied. From here on no write of
\* an older owner can succeed (as built). The owner reads the log from the
\* committed offset; inputs up to skipTo are read again and skipped. An
\* owner that had k before takes it again only once its old batch and lane
\* for k are done.
Assign(o, k) ==
    /\ owner[k] = o
    /\ mine[o][k] < epoch[k]
    /\ Idle(o, k)
    /\ rowEpoch' = [rowEpoch EXCEPT ![k] = epoch[k]]
    /\ mine' = [mine EXCEPT ![o][k] = epoch[k]]
    /\ serving' = [serving EXCEPT ![o][k] = TRUE]
    /\ next' = [next EXCEPT ![o][k] = committed[k] + 1]
    /\ skipTo' = [skipTo EXCEPT ![o][k] = Last(applied[k])]
    /\ acked' = [acked EXCEPT ![o][k] = Last(applied[k])]
    /\ UNCHANGED <<map, version, applied, lane, batch, phase, readVersion, writes>>

\* Read the next input of k's log: into the lane (submit to Ferry), or
\* skipped if the row said it was applied already.
Consume(o, k) ==
    /\ serving[o][k]
    /\ next[o][k] <= N
    /\ next' = [next EXCEPT ![o][k] = @ + 1]
    /\ IF next[o][k] <= skipTo[o][k]
         THEN UNCHANGED lane
         ELSE lane' = [lane EXCEPT ![o][k] = Append(@, next[o][k])]
    /\ UNCHANGED <<map, store, mine, serving, skipTo, batch, phase, readVersion,
                   acked, writes>>

\* Ferry takes a batch from the front of the lane when none is in flight.
\* It does so whether or not the owner still serves the key: Ferry knows
\* nothing of the map.
Take(o, k) ==
    /\ lane[o][k] # <<>>
    /\ batch[o][k] = <<>>
    /\ LET n == Min(BatchMax, Len(lane[o][k])) IN
         /\ batch' = [batch EXCEPT ![o][k] = SubSeq(lane[o][k], 1, n)]
         /\ lane' = [lane EXCEPT ![o][k] = SubSeq(@, n + 1, Len(@))]
    /\ phase' = [phase EXCEPT ![o][k] = "read"]
    /\ UNCHANGED <<map, store, mine, serving, next, skipTo, readVersion, acked, writes>>

\* The batch function, first round trip: read the row.
Read(o, k) ==
    /\ phase[o][k] = "read"
    /\ readVersion' = [readVersion EXCEPT ![o][k] = version[k]]
    /\ phase' = [phase EXCEPT ![o][k] = "write"]
    /\ UNCHANGED <<map, store, mine, serving, next, skipTo, lane, batch, acked, writes>>

\* The batch function, second round trip: the conditional write.
\*   WHERE version = read AND owner_epoch = mine   (as built)
\*   WHERE version = read                          (NoFence)
\* Refused on the epoch: fenced. The batch's callers get an error, nothing
\* is applied, the owner stops serving k and its lane is answered with the
\* same error. Refused on the version alone: a conflict; read again. Held:
\* the batch is appended and answered ok.
Write(o, k) ==
    /\ phase[o][k] = "write"
    /\ LET fenceHolds   == Flaw = "NoFence" \/ rowEpoch[k] = mine[o][k]
           versionHolds == version[k] = readVersion[o][k]
       IN  IF ~fenceHolds
             THEN /\ batch' = [batch EXCEPT ![o][k] = <<>>]
                  /\ lane' = [lane EXCEPT ![o][k] = <<>>]
                  /\ phase' = [phase EXCEPT ![o][k] = "none"]
                  /\ serving' = [serving EXCEPT ![o][k] = FALSE]
                  /\ UNCHANGED <<store, acked, writes>>
           ELSE IF ~versionHolds
             THEN /\ phase' = [phase EXCEPT ![o][k] = "read"]
                  /\ UNCHANGED <<store, serving, lane, batch, acked, writes>>
           ELSE /\ applied' = [applied EXCEPT ![k] = @ \o batch[o][k]]
                /\ version' = [version EXCEPT ![k] = @ + 1]
                /\ writes' = [writes EXCEPT ![k] =
                                Append(@, [by |-> mine[o][k], row |-> rowEpoch[k]])]
                /\ acked' = [acked EXCEPT ![o][k] = Last(batch[o][k])]
                /\ batch' = [batch EXCEPT ![o][k] = <<>>]
                /\ phase' = [phase EXCEPT ![o][k] = "none"]
                /\ UNCHANGED <<rowEpoch, serving, lane>>
    /\ UNCHANGED <<map, mine, next, skipTo, readVersion>>

\* Commit what was answered ok. The group takes the commit only from the
\* owner the map names now, at the epoch it names now.
Commit(o, k) ==
    /\ owner[k] = o
    /\ mine[o][k] = epoch[k]
    /\ serving[o][k]
    /\ acked[o][k] > committed[k]
    /\ committed' = [committed EXCEPT ![k] = acked[o][k]]
    /\ UNCHANGED <<owner, epoch, moves, store, owners, writes>>

\* An owner notices that k was moved away and reads no more of its log.
Stop(o, k) ==
    /\ serving[o][k]
    /\ mine[o][k] # epoch[k]
    /\ serving' = [serving EXCEPT ![o][k] = FALSE]
    /\ UNCHANGED <<map, store, mine, next, skipTo, lane, batch, phase,
                   readVersion, acked, writes>>

Work(o, k) ==
    \/ Assign(o, k)
    \/ Consume(o, k)
    \/ Take(o, k)
    \/ Read(o, k)
    \/ Write(o, k)
    \/ Commit(o, k)
    \/ Stop(o, k)

-----------------------------------------------------------------------------

\* Settled: for every key the owner the map names serves it at its epoch,
\* has read the whole log and committed it; no batch is in flight and no
\* lane holds anything anywhere; the other owner has stopped.
Settled ==
    \A k \in Keys :
        /\ mine[owner[k]][k] = epoch[k]
        /\ next[owner[k]][k] > N
        /\ committed[k] = N
        /\ \A o \in Owners :
             /\ Idle(o, k)
             /\ o # owner[k] => ~serving[o][k]

\* At rest: nothing has to happen any more (the map may still move a key).
Done ==
    /\ Settled
    /\ UNCHANGED vars

Next ==
    \/ \E k \in Keys : Move(k)
    \/ \E o \in Owners, k \in Keys : Work(o, k)
    \/ Done

\* Every owner keeps working on every key (its consumer polls, its batch
\* functions return). The map's moves are left free.
Spec == Init /\ [][Next]_vars /\ \A o \in Owners, k \in Keys : WF_vars(Work(o, k))

-----------------------------------------------------------------------------
(* Properties *)

\* Nothing is applied twice: each input at most once in the store's value.
AppliedOnce ==
    \A k \in Keys : Len(applied[k]) = Cardinality(Range(applied[k]))

\* Order: a key's inputs are applied in strictly increasing sequence.
AppliedInOrder ==
    \A k \in Keys : \A j \in 1 .. Len(applied[k]) - 1 : applied[k][j] < applied[k][j + 1]

\* G1 at the store: a key's applied writes form one chain, one owner at a
\* time. Each write succeeds only for the owner the row names, so once a new
\* owner has taken the row no older owner writes again, and the writers'
\* epochs never go down.
StoreG1 ==
    \A k \in Keys :
        /\ \A j \in DOMAIN writes[k] : writes[k][j].by = writes[k][j].row
        /\ \A j \in 1 .. Len(writes[k]) - 1 : writes[k][j].by <= writes[k][j + 1].by

\* Nothing committed is missing from the store: the new owner may start
\* from the committed offset.
CommittedApplied ==
    \A k \in Keys : \A s \in 1 .. committed[k] : s \in Range(applied[k])

\* Nothing lost, at rest: once settled every input of the log is applied.
SettledAllApplied ==
    Settled => \A k \in Keys : Range(applied[k]) = Seqs

\* Nothing lost, liveness: every input of the log is eventually applied.
EveryInputApplied ==
    <>[](\A k \in Keys : Range(applied[k]) = Seqs)

-----------------------------------------------------------------------------
(* Bookkeeping of the design as built, checked by Handover.cfg only: a     *)
(* broken design breaks these before the guarantee its variant shows.      *)

TypeOK ==
    /\ owner \in [Keys -> Owners]
    /\ epoch \in [Keys -> 1 .. Moves + 1]
    /\ moves \in [Keys -> 0 .. Moves]
    /\ committed \in [Keys -> 0 .. N]
    /\ version \in [Keys -> Nat]
    /\ rowEpoch \in [Keys -> 0 .. Moves + 1]
    /\ applied \in [Keys -> Seq(Seqs)]
    /\ mine \in [Owners -> [Keys -> 0 .. Moves + 1]]
    /\ serving \in [Owners -> [Keys -> BOOLEAN]]
    /\ next \in [Owners -> [Keys -> 1 .. N + 1]]
    /\ skipTo \in [Owners -> [Keys -> 0 .. N]]
    /\ lane \in [Owners -> [Keys -> Seq(Seqs)]]
    /\ batch \in [Owners -> [Keys -> Seq(Seqs)]]
    /\ phase \in [Owners -> [Keys -> Phases]]
    /\ acked \in [Owners -> [Keys -> 0 .. N]]

\* The store's value is exactly the log's first inputs, in order, with no
\* gap: applied once, in order, and nothing skipped.
AppliedIsPrefix ==
    \A k \in Keys : \A j \in DOMAIN applied[k] : applied[k][j] = j

\* The row names an owner that was assigned; epochs only grow.
RowEpochKnown ==
    \A k \in Keys :
        /\ rowEpoch[k] <= epoch[k]
        /\ \A o \in Owners : mine[o][k] <= rowEpoch[k]

\* An owner has a batch in flight exactly while its phase says so.
OneBatchPerOwner ==
    \A o \in Owners, k \in Keys : (batch[o][k] = <<>>) = (phase[o][k] = "none")

=============================================================================
