package ferry.pcpeer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PgUrlTest {
    @Test
    void userHostPortAndDatabaseBecomeJdbc() {
        assertEquals("jdbc:postgresql://127.0.0.1:54331/postgres?user=ferry",
                PgUrl.toJdbc("postgres://ferry@127.0.0.1:54331/postgres"));
    }

    @Test
    void missingPortAndDatabaseTakeLibpqDefaults() {
        assertEquals("jdbc:postgresql://localhost:5432/bob?user=bob", PgUrl.toJdbc("postgresql://bob@localhost"));
    }

    @Test
    void passwordAndQueryAreCarriedOver() {
        assertEquals("jdbc:postgresql://h:1/d?user=u&password=p%40ss&sslmode=disable",
                PgUrl.toJdbc("postgres://u:p%40ss@h:1/d?sslmode=disable"));
    }

    @Test
    void urlsWithoutUserOrHostOrSchemeAreRefusedWithTheFix() {
        assertTrue(assertThrows(Fatal.class, () -> PgUrl.toJdbc("postgres://127.0.0.1:1/d"))
                .getMessage().contains("needs a user"));
        assertTrue(assertThrows(Fatal.class, () -> PgUrl.toJdbc("postgres:///d"))
                .getMessage().contains("needs a"));
        assertTrue(assertThrows(Fatal.class, () -> PgUrl.toJdbc("jdbc:postgresql://h/d"))
                .getMessage().contains("expected postgres://"));
    }
}
