package com.example.notes;

/** Name helpers. */
public final class Names {
    private Names() {}

    /** Trims a name and lower-cases it; it does not encode anything. */
    public static String normalise(String name) {
        if (name == null) {
            return "";
        }
        return name.trim().toLowerCase();
    }
}
