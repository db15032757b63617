package com.example.notes;

import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Properties;

/** Share tokens for notes. */
public class TokenService {

    /** A share token: predictable, from java.util.Random. */
    public long shareToken() {
        java.util.Random r = new java.util.Random();
        return r.nextLong();
    }

    /** The digest of a note, with the algorithm the configuration names. */
    public byte[] digest(byte[] note) throws IOException, NoSuchAlgorithmException {
        Properties props = new Properties();
        try (InputStream in = TokenService.class.getClassLoader().getResourceAsStream("notes.properties")) {
            props.load(in);
        }
        String alg = props.getProperty("digest.algorithm", "MD5");
        MessageDigest md = MessageDigest.getInstance(alg);
        return md.digest(note);
    }
}
