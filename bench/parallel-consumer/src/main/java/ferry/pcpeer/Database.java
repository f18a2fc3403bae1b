package ferry.pcpeer;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Opens autocommit JDBC connections to one PostgreSQL database, with timeouts so that an
 * unreachable server is an error within seconds instead of a hang.
 */
final class Database {
    private static final String CONNECT_TIMEOUT_SECONDS = "10";

    private final String jdbcUrl;

    /** The database at {@code jdbcUrl} ({@code jdbc:postgresql://...}). */
    Database(String jdbcUrl) {
        this.jdbcUrl = jdbcUrl;
    }

    /** A new autocommit connection; the caller closes it. */
    Connection open() throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("connectTimeout", CONNECT_TIMEOUT_SECONDS);
        properties.setProperty("ApplicationName", "ferry-pc-peer");
        properties.setProperty("tcpKeepAlive", "true");
        Connection connection = DriverManager.getConnection(jdbcUrl, properties);
        connection.setAutoCommit(true);
        return connection;
    }

    /** Checks the server answers and creates the schema if absent; a {@link Fatal} error otherwise. */
    void prepare(Schema schema) {
        try (Connection connection = open()) {
            schema.ensure(connection);
        } catch (SQLException e) {
            throw new Fatal("cannot prepare PostgreSQL at " + withoutPassword(jdbcUrl)
                    + " (is it running and does the user exist?)", e);
        }
    }

    /** {@code url} with any password parameter blanked, for messages. */
    static String withoutPassword(String url) {
        return url.replaceAll("password=[^&]*", "password=***");
    }
}
