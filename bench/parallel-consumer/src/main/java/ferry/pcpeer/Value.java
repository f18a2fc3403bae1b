package ferry.pcpeer;

import java.time.Instant;

/**
 * A record's value: UTF-8 text {@code "<seq> <produce_unix_micros>"}, where {@code seq} counts a
 * key's records from 1 in the order they were produced.
 *
 * @param seq the record's place among its key's records, from 1
 * @param producedMicros when the producer sent it, in microseconds since the Unix epoch
 */
record Value(long seq, long producedMicros) {
    /** Renders the value a producer writes for {@code seq} sent at {@code producedMicros}. */
    String render() {
        return seq + " " + producedMicros;
    }

    /** Reads {@code text}; throws {@link IllegalArgumentException} naming it when malformed. */
    static Value parse(String text) {
        String[] parts = text == null ? new String[0] : text.split(" ");
        try {
            if (parts.length == 2) {
                return new Value(Long.parseLong(parts[0]), Long.parseLong(parts[1]));
            }
        } catch (NumberFormatException e) {
            // reported below with the text
        }
        throw new IllegalArgumentException("value '" + text + "' is not '<seq> <produce_unix_micros>'");
    }

    /** The wall clock in microseconds since the Unix epoch, the unit of {@link #producedMicros}. */
    static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
