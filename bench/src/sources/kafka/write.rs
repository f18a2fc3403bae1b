//! The partition-serial member's writes to the rows of [`super::rows`]
//! (the Java peer's are the same statements; ferry's member goes through
//! `ferry::entity` instead, [`super::ferry_member`]): taking a partition
//! (its owner epoch raised) and applying records to their keys' rows, many
//! keys in one statement.
//!
//! Applying a record `(seq, offset)` to its key's row: `applied += 1`,
//! `disorder += 1` unless `seq = last_seq + 1`, then `last_seq = seq`,
//! `last_offset = offset`, `owner_epoch =` the writer's epoch. With the
//! fence, a record at or below the row's `last_offset` is skipped (it is
//! applied already), and a writer whose epoch is below the row's
//! `owner_epoch` changes nothing: it is told its key is fenced.
//!
//! The statement locks the trip's rows (in key order, so two writers never
//! wait on each other in a cycle) and computes from what it locked, so a
//! late write of a killed member that commits after the new owner's is
//! judged against the new owner's `last_offset`, not a stale read.

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Statement};

use crate::store::on_postgres::said;
use crate::store::Fence;

/// One record to apply: its key's sequence number, its offset, the epoch
/// its partition was taken with, and when it was produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rec {
    /// The key's sequence number, from 1, in produce order.
    pub seq: i64,
    /// Its offset in its partition.
    pub offset: i64,
    /// The member's owner epoch of the record's partition.
    pub epoch: i64,
    /// When it was produced, microseconds since the Unix epoch.
    pub produced_us: i64,
}

/// What became of one key's batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied (or, with the fence, skipped as applied before).
    Applied,
    /// The row names a newer owner: nothing applied.
    Fenced,
}

/// A connection with the take and the apply prepared.
pub struct Writer {
    client: Client,
    take: Statement,
    apply: Statement,
    fence: Fence,
}

impl Writer {
    /// Prepares the statements for tables prefixed `prefix` on `client`.
    pub async fn prepare(client: Client, prefix: &str, fence: Fence) -> Result<Writer, String> {
        let take = client
            .prepare_typed(&take_sql(prefix), &[Type::TEXT, Type::INT4])
            .await
            .map_err(|err| format!("could not prepare the take: {}", said(&err)))?;
        let types = [
            Type::TEXT,
            Type::TEXT_ARRAY,
            Type::INT8_ARRAY,
            Type::INT8_ARRAY,
            Type::INT8_ARRAY,
            Type::BOOL,
        ];
        let apply = client
            .prepare_typed(&apply_sql(prefix), &types)
            .await
            .map_err(|err| format!("could not prepare the write: {}", said(&err)))?;
        Ok(Writer {
            client,
            take,
            apply,
            fence,
        })
    }

    /// Takes `partition` of `topic`: its epoch raised by one (from 1);
    /// answers the new epoch.
    pub async fn take(&self, topic: &str, partition: i32) -> Result<i64, String> {
        let row = self
            .client
            .query_one(&self.take, &[&topic, &partition])
            .await
            .map_err(|err| format!("taking {topic}/{partition}: {}", said(&err)))?;
        row.try_get(0).map_err(|err| said(&err))
    }

    /// Applies each key's records (in offset order) in one statement;
    /// answers each key's outcome, in the order given.
    pub async fn apply(
        &self,
        topic: &str,
        batches: &[(&str, &[Rec])],
    ) -> Result<Vec<Outcome>, String> {
        let records = batches
            .iter()
            .flat_map(|(key, recs)| recs.iter().map(move |r| (*key, r)));
        let (mut keys, mut epochs, mut seqs, mut offsets) = (vec![], vec![], vec![], vec![]);
        for (key, rec) in records {
            keys.push(key);
            epochs.push(rec.epoch);
            seqs.push(rec.seq);
            offsets.push(rec.offset);
        }
        let fence = self.fence == Fence::On;
        let rows = self
            .client
            .query(
                &self.apply,
                &[&topic, &keys, &epochs, &seqs, &offsets, &fence],
            )
            .await
            .map_err(|err| format!("writing: {}", said(&err)))?;
        let mut owners = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let key: &str = row.try_get(0).map_err(|err| said(&err))?;
            let owner: i64 = row.try_get(1).map_err(|err| said(&err))?;
            owners.insert(key.to_owned(), owner);
        }
        batches
            .iter()
            .map(|(key, recs)| {
                let owner = owners
                    .get(*key)
                    .ok_or_else(|| format!("key {key} has no row in the table"))?;
                let epoch = recs.iter().map(|r| r.epoch).min().unwrap_or(0);
                Ok(match fence && *owner > epoch {
                    true => Outcome::Fenced,
                    false => Outcome::Applied,
                })
            })
            .collect()
    }
}

/// Raises the partition's epoch (from 1), answering the new one.
fn take_sql(p: &str) -> String {
    format!(
        "INSERT INTO {p}_epochs (topic, partition, epoch) VALUES ($1, $2, 1) \
         ON CONFLICT (topic, partition) DO UPDATE SET epoch = {p}_epochs.epoch + 1 \
         RETURNING epoch"
    )
}

/// The write: `$1` topic, `$2..$5` one element per record (key, epoch,
/// seq, offset; a key's records together, in offset order), `$6` the
/// fence. Answers each key's `owner_epoch` as locked, before the write.
fn apply_sql(p: &str) -> String {
    format!(
        "WITH r AS (SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) \
                      WITH ORDINALITY AS r(key, epoch, seq, off, n)), \
         locked AS (SELECT key, last_seq, last_offset, owner_epoch FROM {p}_keys \
                     WHERE topic = $1 AND key IN (SELECT key FROM r) ORDER BY key FOR UPDATE), \
         kept AS (SELECT r.key, r.epoch, r.seq, r.off, r.n, l.last_seq AS before, \
                         lag(r.seq) OVER (PARTITION BY r.key ORDER BY r.n) AS prev \
                    FROM r JOIN locked l ON l.key = r.key \
                   WHERE NOT $6 OR (r.off > l.last_offset AND r.epoch >= l.owner_epoch)), \
         agg AS (SELECT key, max(epoch) AS epoch, count(*) AS applied, \
                        count(*) FILTER (WHERE seq <> coalesce(prev, before) + 1) AS disorder, \
                        (array_agg(seq ORDER BY n DESC))[1] AS last_seq, \
                        (array_agg(off ORDER BY n DESC))[1] AS last_offset \
                   FROM kept GROUP BY key), \
         done AS (UPDATE {p}_keys k SET applied = k.applied + agg.applied, \
                         disorder = k.disorder + agg.disorder, last_seq = agg.last_seq, \
                         last_offset = agg.last_offset, owner_epoch = agg.epoch \
                    FROM agg WHERE k.topic = $1 AND k.key = agg.key RETURNING k.key) \
         SELECT key, owner_epoch FROM locked"
    )
}
