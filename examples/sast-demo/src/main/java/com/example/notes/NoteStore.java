package com.example.notes;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/** Where notes live. */
public class NoteStore {
    public Connection connection() throws SQLException {
        return DriverManager.getConnection("jdbc:h2:mem:notes");
    }
}
