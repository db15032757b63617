package com.example.notes;

/** HTML output helpers. */
public final class Html {
    private Html() {}

    /** Escapes text for an HTML body with the OWASP encoder. */
    public static String escape(String s) {
        return org.owasp.encoder.Encode.forHtml(s);
    }
}
