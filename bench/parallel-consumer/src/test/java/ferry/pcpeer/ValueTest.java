package ferry.pcpeer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ValueTest {
    @Test
    void renderedValuesParseBack() {
        Value value = new Value(7, 1_764_000_000_123_456L);
        assertEquals("7 1764000000123456", value.render());
        assertEquals(value, Value.parse(value.render()));
    }

    @Test
    void malformedValuesAreRefused() {
        for (String text : new String[] {"", "7", "7 x", "7 1 2", "a 1"}) {
            assertThrows(IllegalArgumentException.class, () -> Value.parse(text), text);
        }
        assertThrows(IllegalArgumentException.class, () -> Value.parse(null));
    }
}
