package ferry.pcpeer;

/**
 * A failure the user can act on: its message is printed alone on one stderr line and the process
 * exits with {@link #EXIT_CODE}.
 *
 * <p>Invariant: the message is one line and says what went wrong and, where it can, how to fix it.
 */
final class Fatal extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The exit code of every failure reported through this type. */
    static final int EXIT_CODE = 1;

    Fatal(String message) {
        super(oneLine(message));
    }

    Fatal(String message, Throwable cause) {
        super(oneLine(message + ": " + describe(cause)), cause);
    }

    /** The innermost cause's class and message, which usually name the real problem. */
    static String describe(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = root.getMessage() == null ? "" : root.getMessage();
        return root.getClass().getSimpleName() + (text.isEmpty() ? "" : " (" + text + ")");
    }

    private static String oneLine(String text) {
        return text.replace('\n', ' ').replace('\r', ' ');
    }
}
