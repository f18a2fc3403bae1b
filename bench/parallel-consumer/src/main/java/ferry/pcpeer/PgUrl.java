package ferry.pcpeer;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns a libpq-style URL ({@code postgres://user[:password]@host[:port][/db][?k=v...]}) into the
 * JDBC URL the PostgreSQL driver takes ({@code jdbc:postgresql://host:port/db?user=...}).
 *
 * <p>Example: {@code postgres://ferry@127.0.0.1:54331/postgres} becomes
 * {@code jdbc:postgresql://127.0.0.1:54331/postgres?user=ferry}. Like libpq, a missing port is
 * 5432 and a missing database is named after the user. Query parameters are passed on unchanged.
 */
final class PgUrl {
    private static final int DEFAULT_PORT = 5432;

    private PgUrl() {}

    /** The JDBC URL for {@code url}; throws {@link Fatal} when it is not a usable TCP URL. */
    static String toJdbc(String url) {
        URI uri = parse(url);
        String user = userOf(uri, url);
        List<String> params = new ArrayList<>();
        params.add("user=" + encode(user));
        passwordOf(uri).ifPresent(p -> params.add("password=" + encode(p)));
        if (uri.getRawQuery() != null && !uri.getRawQuery().isEmpty()) {
            params.add(uri.getRawQuery());
        }
        int port = uri.getPort() == -1 ? DEFAULT_PORT : uri.getPort();
        return "jdbc:postgresql://" + hostOf(uri, url) + ":" + port + "/" + encode(databaseOf(uri, user))
                + "?" + String.join("&", params);
    }

    private static URI parse(String url) {
        if (!url.startsWith("postgres://") && !url.startsWith("postgresql://")) {
            throw new Fatal("--postgres " + url + ": expected postgres://user@host:port/db");
        }
        try {
            return new URI(url);
        } catch (URISyntaxException e) {
            throw new Fatal("--postgres " + url + " is not a valid URL", e);
        }
    }

    private static String hostOf(URI uri, String url) {
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new Fatal("--postgres " + url + ": needs a TCP host, e.g. postgres://user@127.0.0.1:5432/db");
        }
        return uri.getHost();
    }

    private static String userOf(URI uri, String url) {
        String info = uri.getRawUserInfo();
        String name = info == null ? "" : decode(info.split(":", 2)[0]);
        if (name.isEmpty()) {
            throw new Fatal("--postgres " + url + ": needs a user, e.g. postgres://user@127.0.0.1:5432/db");
        }
        return name;
    }

    private static java.util.Optional<String> passwordOf(URI uri) {
        String info = uri.getRawUserInfo();
        if (info == null || !info.contains(":")) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(decode(info.split(":", 2)[1]));
    }

    private static String databaseOf(URI uri, String user) {
        String path = uri.getRawPath();
        String name = path == null || path.length() <= 1 ? "" : decode(path.substring(1));
        return name.isEmpty() ? user : name;
    }

    private static String decode(String text) {
        return URLDecoder.decode(text.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    private static String encode(String text) {
        return URLEncoder.encode(text, StandardCharsets.UTF_8);
    }
}
